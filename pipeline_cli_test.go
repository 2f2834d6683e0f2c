package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/stream/transport"
)

// Pipeline settings are checked like every other key: each bad value is
// reported with its key path, all at once.
func TestValidatePipelineKeys(t *testing.T) {
	t.Setenv("TRAINSCOPE_STREAM_REPLICAS", "9")
	t.Setenv("TRAINSCOPE_PUBLISH_MESSAGE_BYTES", "10")
	t.Setenv("TRAINSCOPE_NATS_URL", "not a url")
	t.Setenv("TRAINSCOPE_SERVE_HTTP", "nowhere")
	t.Setenv("TRAINSCOPE_INGEST_ACK_WAIT", "10ms")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"validate"}, &out, &errOut); code != 2 {
		t.Fatalf("validate exit %d, want 2: %s%s", code, out.String(), errOut.String())
	}
	for _, key := range []string{"stream.replicas", "publish.message_bytes", "nats.url", "serve.http", "ingest.ack_wait"} {
		if !strings.Contains(errOut.String(), key+":") {
			t.Errorf("validate does not name %s:\n%s", key, errOut.String())
		}
	}
}

// A server that is not there is an error naming the URL and what to do,
// not a hang.
func TestPublishServerUnreachable(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"publish", "--run", "x", "-q", "--nats-url", "nats://127.0.0.1:1"}, sampleRun...), &out, &errOut)
	if code == 0 {
		t.Fatal("publish to nowhere succeeded")
	}
	msg := errOut.String()
	if !strings.Contains(msg, "cannot reach NATS at nats://127.0.0.1:1") || !strings.Contains(msg, "trainscope serve") {
		t.Fatalf("unhelpful error: %s", msg)
	}
}

// An external server with user/password: the right password connects, a
// wrong one is refused with the server's reason.
func TestConnectWithUserPassword(t *testing.T) {
	opts := &natsserver.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, JetStream: true, StoreDir: t.TempDir(),
		Users: []*natsserver.User{{Username: "ingest", Password: "s3cret"}}}
	s, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	defer s.Shutdown()
	if !s.ReadyForConnections(10e9) {
		t.Fatal("server did not start")
	}
	nc, err := transport.Connect(transport.NATSConfig{URL: s.ClientURL(), User: "ingest", Password: "s3cret"}, "test")
	if err != nil {
		t.Fatalf("right password: %v", err)
	}
	nc.Close()
	_, err = transport.Connect(transport.NATSConfig{URL: s.ClientURL(), User: "ingest", Password: "wrong"}, "test")
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("wrong password: %v", err)
	}
}

// An Nsight Systems SQLite export analyzes like a folder of traces: one
// rank per GPU.
func TestAnalyzeNsysExport(t *testing.T) {
	path := corpus.Path(t, "nsys/h100_2gpu_1s.sqlite")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"analyze", "-q", "--format", "json", path}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var rep struct {
		Runs []struct {
			Ranks []int `json:"ranks"`
		} `json:"runs"`
		Metrics []struct {
			Detector string `json:"detector"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || fmt.Sprint(rep.Runs[0].Ranks) != "[0 1]" {
		t.Fatalf("runs %+v, want one run of ranks 0 and 1", rep.Runs)
	}
}
