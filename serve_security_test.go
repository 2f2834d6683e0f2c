package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/server"
	"github.com/trainscope/trainscope/sql/flightsrv"
	"github.com/trainscope/trainscope/stream/transport"
)

func serveConfig(t *testing.T) *config.Config {
	t.Helper()
	t.Setenv("TRAINSCOPE_NATS_LISTEN", "127.0.0.1:0")
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Serve.DataDir, cfg.Serve.HTTP, cfg.Serve.Flight = t.TempDir(), "127.0.0.1:0", "127.0.0.1:0"
	return cfg
}

// With a token and a NATS user: HTTP and Flight SQL want the token (all
// but /healthz); NATS wants credentials, and a publisher may publish
// batches but not read the stream or delete the ingest consumer.
func TestServeAuthenticates(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := serveConfig(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("t0ken\n"), 0o600)
	cfg.Serve.Auth.TokenFile = tokenFile
	cfg.NATS.Server.User, cfg.NATS.Server.Password = "agent", "agent-pw"
	srv, err := server.Start(ctx, cfg, mustSet(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	base := "http://" + srv.HTTPAddr()

	httpGet := func(path, token string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	for _, c := range []struct {
		path, token string
		want        int
	}{{"/runs", "", 401}, {"/metrics", "wrong", 401}, {"/runs", "t0ken", 200}, {"/metrics", "t0ken", 200}, {"/healthz", "", 200}} {
		if code, body := httpGet(c.path, c.token); code != c.want {
			t.Errorf("GET %s with token %q: %d %s, want %d", c.path, c.token, code, body, c.want)
		}
	}
	if _, err := flightsrv.Query(ctx, srv.FlightAddr(), "SELECT 1"); err == nil || !strings.Contains(err.Error(), "missing bearer token") {
		t.Errorf("Flight SQL without the token: %v", err)
	}
	if res, err := (flightsrv.Dialer{Token: "t0ken"}).Query(ctx, srv.FlightAddr(), "SELECT 1 AS x"); err != nil || res.NumRows() != 1 {
		t.Errorf("Flight SQL with the token: %v", err)
	}

	// NATS: nobody without credentials
	for _, c := range []transport.NATSConfig{{URL: srv.NATSURL()}, {URL: srv.NATSURL(), User: "agent", Password: "nope"}} {
		if nc, err := transport.Connect(c, "intruder"); err == nil {
			nc.Close()
			t.Errorf("connected to NATS as %q without the right password", c.User)
		}
	}
	// the publisher publishes a run, which is analysed
	t.Setenv("TRAINSCOPE_NATS_USER", "agent")
	t.Setenv("TRAINSCOPE_NATS_PASSWORD", "agent-pw")
	var out, errOut bytes.Buffer
	if code := run(ctx, append([]string{"publish", "--run", "authed", "-q", "--nats-url", srv.NATSURL()}, sampleRun...), &out, &errOut); code != 0 {
		t.Fatalf("publish as the publisher user: exit %d: %s", code, errOut.String())
	}
	waitFor(t, "the published run's report", func() bool { code, _ := httpGet("/runs/authed/report", "t0ken"); return code == 200 })
	// but may not read batches or touch the consumer
	nc, err := transport.Connect(transport.NATSConfig{URL: srv.NATSURL(), User: "agent", Password: "agent-pw"}, "publisher")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	// a denied request gets no answer: the caller's time limit ends it
	short, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	if err := js.DeleteConsumer(short, cfg.Stream.Name, cfg.Ingest.Durable); err == nil {
		t.Errorf("the publisher deleted the ingest consumer")
	}
	short2, stop2 := context.WithTimeout(ctx, time.Second)
	defer stop2()
	if _, err := js.CreateOrUpdateConsumer(short2, cfg.Stream.Name, jetstream.ConsumerConfig{Durable: "thief"}); err == nil {
		t.Errorf("the publisher made a consumer to read the stream")
	}
	if ci, err := srv.Monitor().Consumer().Info(ctx); err != nil || ci.Name != cfg.Ingest.Durable {
		t.Errorf("the ingest consumer after the attempts: %v", err)
	}
	denied := make(chan error, 1)
	nc2, err := nats.Connect(srv.NATSURL(), nats.UserInfo("agent", "agent-pw"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { denied <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	nc2.Subscribe("trainscope.>", func(*nats.Msg) {})
	nc2.Flush()
	select {
	case err := <-denied:
		if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			t.Errorf("subscribing to batches: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the publisher could subscribe to every run's batches")
	}
}

// fakeConsumer answers Info as a deleted consumer does.
type fakeConsumer struct {
	jetstream.Consumer
	err error
}

func (f fakeConsumer) Info(context.Context) (*jetstream.ConsumerInfo, error) { return nil, f.err }

// /healthz says when the ingest consumer is gone (ingestion stops
// silently otherwise), and the ingestor makes it again.
func TestServeIngestConsumerDeleted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := serveConfig(t)
	srv, err := server.Start(ctx, cfg, mustSet(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	base := "http://" + srv.HTTPAddr()

	real := srv.Monitor().Consumer()
	srv.Monitor().Use(fakeConsumer{real, jetstream.ErrConsumerNotFound})
	r, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 503 || !strings.Contains(string(b), "ingest consumer trainscope-ingest is missing") {
		t.Errorf("/healthz with the consumer gone: %d %s", r.StatusCode, b)
	}
	if m := get(t, base+"/metrics"); !strings.Contains(m, "trainscope_ingest_consumer_up 0\n") {
		t.Errorf("/metrics does not say the consumer is down")
	}
	srv.Monitor().Use(real)

	// someone deletes it for real: the ingestor makes it again and goes on
	nc, err := transport.ConnectEmbedded(srv.Embedded(), "admin")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if err := js.DeleteConsumer(ctx, cfg.Stream.Name, cfg.Ingest.Durable); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the consumer to be made again", func() bool { return srv.Stats().Recreated.Load() == 1 })
	var out, errOut bytes.Buffer
	if code := run(ctx, append([]string{"publish", "--run", "after", "-q", "--nats-url", srv.NATSURL()}, sampleRun...), &out, &errOut); code != 0 {
		t.Fatalf("publish: %s", errOut.String())
	}
	waitGet(t, base+"/runs/after/report", time.Minute)
	if h := get(t, base+"/healthz"); !strings.Contains(h, `"status":"ok"`) {
		t.Errorf("/healthz after the consumer came back: %s", h)
	}
	if _, err := js.Consumer(ctx, cfg.Stream.Name, cfg.Ingest.Durable); errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("the consumer is still gone")
	}
}
