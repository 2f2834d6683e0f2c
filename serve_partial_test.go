package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/server"
	"github.com/trainscope/trainscope/stream/transport"
)

// After a crash, batches an ingestor had fetched but not committed come
// back only after ack_wait, while the quiet timer has long passed. The
// run is not final until they are stored: the scheduler waits, up to
// serve.timeout, then serves a report marked partial (recorded as partial,
// so alert rules skip it), and analyses the run again once the rest is in.
// It used to serve 22 of 41 findings as if that were the run.
func TestServePartialReportWhileRedeliveryPending(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nats, err := transport.StartEmbedded(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer nats.Stop()
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.NATS.URL = nats.URL()
	cfg.Serve.DataDir, cfg.Serve.HTTP, cfg.Serve.Flight = t.TempDir(), "127.0.0.1:0", ""
	cfg.Ingest.AckWait = 2 * time.Second

	// the run is published before any ingestor runs
	var out, errOut bytes.Buffer
	if code := run(ctx, append([]string{"publish", "--run", "crash", "--host", "node-1", "-q", "--nats-url", nats.URL()}, sampleRun...), &out, &errOut); code != 0 {
		t.Fatalf("publish exit %d: %s", code, errOut.String())
	}
	m := regexp.MustCompile(`in (\d+) messages`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("publish said %q", out.String())
	}
	sent, _ := strconv.Atoi(m[1])

	// an ingestor fetched the first messages and died before committing them
	nc, err := transport.Connect(cfg.NATS, "crashed-ingestor")
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	jstream, err := transport.EnsureStream(ctx, js, cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := ingest.NewConsumer(ctx, jstream, cfg.Ingest)
	if err != nil {
		t.Fatal(err)
	}
	const held = 5
	batch, err := cons.Fetch(held)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for range batch.Messages() {
		got++
	}
	nc.Close()
	if got != held {
		t.Fatalf("fetched %d messages, want %d", got, held)
	}

	clk := newTestClock()
	srv, err := server.Start(ctx, cfg, mustSet(t), t.Logf, server.WithClock(clk.Now, clk.ticks))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	waitFor(t, "the messages nobody held to be stored", func() bool { return srv.Stats().Messages.Load() == int64(sent-held) })

	// quiet, but 5 messages of the run are on their way: no report yet
	clk.Advance(cfg.Serve.Quiet)
	clk.Tick()
	if srv.Scheduler().Report("crash") != nil || srv.Scheduler().Passes.Load() != 0 {
		t.Fatalf("analysed while %d of its messages were waiting for redelivery", held)
	}
	// past serve.timeout: a report, marked partial
	clk.Advance(cfg.Serve.Timeout)
	clk.Tick()
	rr := srv.Scheduler().Report("crash")
	if rr == nil || !rr.Partial || rr.Status == nil {
		t.Fatalf("after the timeout: report %+v, want a partial one", rr)
	}
	if md := string(rr.MD); !strings.HasPrefix(md, "# trainscope report\n\n> **Partial report**: the stream holds messages of this run up to sequence") {
		t.Errorf("the partial report does not say so first:\n%s", head(md, 5))
	}
	var partial bool
	if err := srv.Store().Conn().QueryRowContext(ctx, "SELECT partial FROM run_status WHERE run_id = 'crash'").Scan(&partial); err != nil || !partial {
		t.Errorf("run_status.partial = %v (%v), want true: alert rules read it", partial, err)
	}
	metrics := get(t, "http://"+srv.HTTPAddr()+"/metrics")
	if !strings.Contains(metrics, "trainscope_detector_partial_runs 1\n") {
		t.Errorf("/metrics does not count the partial run")
	}

	// the held messages come back after ack_wait; the run is analysed again
	waitFor(t, "the redelivered messages to be stored", func() bool { return srv.Stats().Messages.Load() == int64(sent) })
	clk.Advance(cfg.Serve.Quiet)
	waitFor(t, "a final report", func() bool {
		clk.Tick()
		r := srv.Scheduler().Report("crash")
		return r != nil && !r.Partial
	})
	out.Reset()
	if code := run(ctx, append([]string{"analyze", "-q", "--run", "crash", "--host", "node-1"}, sampleRun...), &out, &errOut); code != 0 {
		t.Fatalf("analyze exit %d: %s", code, errOut.String())
	}
	if final := string(srv.Scheduler().Report("crash").MD); final != out.String() {
		t.Errorf("the final report differs from analyze's:\n%s", head(final, 12))
	}
	if err := srv.Store().Conn().QueryRowContext(ctx, "SELECT partial FROM run_status WHERE run_id = 'crash'").Scan(&partial); err != nil || partial {
		t.Errorf("run_status.partial = %v (%v) after the final pass", partial, err)
	}
	if n := srv.Scheduler().Passes.Load(); n != 2 {
		t.Errorf("%d passes, want 2 (partial, final)", n)
	}
}
