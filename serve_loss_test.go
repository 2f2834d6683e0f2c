package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/trainscope/trainscope/internal/server"
	"github.com/trainscope/trainscope/stream/transport"
)

// lossNATS is a JetStream server of the test's own, as an operator runs
// one (nats.url), and a connection to it.
func lossNATS(t *testing.T) (*transport.Embedded, jetstream.JetStream) {
	t.Helper()
	e, err := transport.StartEmbedded(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	nc, err := transport.Connect(transport.NATSConfig{URL: e.URL()}, "operator")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return e, js
}

// With a small stream.max_bytes and nobody ingesting, publishing more
// than fits fails and says why; it used to say "published" while the
// stream dropped the oldest batches.
func TestPublishFailsWhenStreamFull(t *testing.T) {
	ctx := context.Background()
	e, js := lossNATS(t)
	sc := transport.DefaultStream
	sc.MaxBytes = 128 << 10
	if _, err := transport.EnsureStream(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRAINSCOPE_PUBLISH_RETRY_FOR", "300ms")
	t.Setenv("TRAINSCOPE_PUBLISH_MESSAGE_BYTES", "65536")
	var out, errOut bytes.Buffer
	code := run(ctx, append([]string{"publish", "--run", "too-big", "-q", "--nats-url", e.URL()}, sampleRun...), &out, &errOut)
	if code == 0 || strings.Contains(out.String(), "published run") {
		t.Fatalf("publish into a full stream: exit %d, %q", code, out.String())
	}
	if msg := errOut.String(); !strings.Contains(msg, "stream TRAINSCOPE is full") || !strings.Contains(msg, "stream.max_bytes") {
		t.Errorf("publish into a full stream says %q; want it to say the stream is full", msg)
	}
}

// A stream that drops its oldest batches (stream.discard: old, as
// configured before discard new, with a max_bytes too small for what was
// published before ingest got to it): the run's report says which
// batches of which trace never arrived, and /metrics counts them. It used
// to be a complete-looking report on part of the run, with nothing
// rejected and no lag.
func TestServeReportsDiscardedBatches(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, js := lossNATS(t)
	cfg := serveConfig(t)
	cfg.NATS.URL = e.URL()
	cfg.Stream.Discard = transport.DiscardOld
	s, err := transport.EnsureStream(ctx, js, cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRAINSCOPE_PUBLISH_MESSAGE_BYTES", "65536")
	var out, errOut bytes.Buffer
	if code := run(ctx, append([]string{"publish", "--run", "lossy", "-q", "--nats-url", e.URL()}, sampleRun...), &out, &errOut); code != 0 {
		t.Fatalf("publish: exit %d: %s", code, errOut.String())
	}
	m := regexp.MustCompile(`in (\d+) messages`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("publish said %q", out.String())
	}
	sent, _ := strconv.Atoi(m[1])
	// the stream shrinks to 100 KB less than it holds: it drops the
	// oldest batches, which nobody has read
	first := map[uint64]string{}
	for seq := uint64(1); seq <= 5; seq++ {
		msg, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		first[seq] = msg.Header.Get(nats.MsgIdHdr)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sc := info.Config
	sc.MaxBytes = int64(info.State.Bytes) - 100_000
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if info, err = s.Info(ctx); err != nil {
		t.Fatal(err)
	}
	dropped := int(info.State.FirstSeq) - 1
	if dropped < 1 || dropped > 5 {
		t.Fatalf("the stream dropped %d messages, want 1 to 5", dropped)
	}
	producer := first[1][:strings.LastIndexByte(first[1], '-')]
	for seq := uint64(1); seq <= uint64(dropped); seq++ {
		if !strings.HasPrefix(first[seq], producer+"-") {
			t.Fatalf("dropped messages of two traces: %v", first)
		}
	}

	var logMu sync.Mutex
	var logs strings.Builder
	logf := func(f string, a ...any) {
		logMu.Lock()
		fmt.Fprintf(&logs, f+"\n", a...)
		logMu.Unlock()
		t.Logf(f, a...)
	}
	cfg.Stream.MaxBytes = sc.MaxBytes
	clk := newTestClock()
	srv, err := server.Start(ctx, cfg, mustSet(t), logf, server.WithClock(clk.Now, clk.ticks))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	waitFor(t, "what the stream holds ingested", func() bool {
		return srv.Stats().Messages.Load() == int64(sent-dropped) && srv.Stats().Missing.Load() == int64(dropped)
	})
	clk.Advance(cfg.Serve.Quiet)
	waitFor(t, "a report", func() bool { clk.Tick(); return srv.Scheduler().Report("lossy") != nil })
	rep := srv.Scheduler().Report("lossy")
	want := regexp.MustCompile(fmt.Sprintf(`%d of (\d+) batches of (\S+) never arrived: the stream no longer held them`, dropped))
	if rep.Status == nil || len(rep.Status.Missing) != 1 || !want.MatchString(rep.Status.Missing[0]) {
		t.Fatalf("the report's status: %+v; want %d batches of one trace missing", rep.Status, dropped)
	}
	md := string(rep.MD)
	if !strings.Contains(md, "**Incomplete data**") || !want.MatchString(md) {
		t.Errorf("the report does not say what is missing:\n%s", head(md, 12))
	}
	var status string
	if err := srv.Store().Conn().QueryRowContext(ctx, "SELECT status FROM run_status WHERE run_id = 'lossy'").Scan(&status); err != nil || !want.MatchString(status) {
		t.Errorf("run_status.status %q (%v)", status, err)
	}
	metrics := get(t, "http://"+srv.HTTPAddr()+"/metrics")
	if w := fmt.Sprintf("trainscope_ingest_missing_batches_total %d\n", dropped); !strings.Contains(metrics, w) {
		t.Errorf("/metrics lacks %q", w)
	}
	logMu.Lock()
	defer logMu.Unlock()
	for _, w := range []string{"drops its oldest batches when full (stream.discard: old)", fmt.Sprintf("run lossy: %d of", dropped)} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("the log does not say %q", w)
		}
	}
}
