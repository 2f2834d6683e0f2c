package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/server"
	"github.com/trainscope/trainscope/stream/transport"
)

// Two serve ingestors share one NATS server's stream in four partitions.
// Four runs are published; every batch is committed once across the two,
// each run is analysed by exactly one of them, and its report is the one
// analyze writes.
func TestServeIngestorsSharePartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("two servers")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nats, err := transport.StartEmbedded(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer nats.Stop()
	var srvs []*server.Server
	var clocks []*testClock
	for _, name := range []string{"ing-a", "ing-b"} {
		cfg, err := config.Load("")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Serve.DataDir, cfg.Serve.HTTP, cfg.Serve.Flight = t.TempDir(), "127.0.0.1:0", ""
		cfg.NATS.URL = nats.URL()
		cfg.Stream.Partitions, cfg.Ingest.Member, cfg.Ingest.Lease = 4, name, time.Second
		clk := newTestClock()
		srv, err := server.Start(ctx, cfg, mustSet(t), t.Logf, server.WithClock(clk.Now, clk.ticks))
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Shutdown()
		srvs, clocks = append(srvs, srv), append(clocks, clk)
	}
	waitFor(t, "the partitions split two and two", func() bool {
		return len(srvs[0].Coordinator().Owned()) == 2 && len(srvs[1].Coordinator().Owned()) == 2
	})
	runs := []string{"job0", "job1", "job2", "job3"}
	sent := 0
	for _, id := range runs {
		var out, errOut bytes.Buffer
		if code := run(ctx, append([]string{"publish", "--run", id, "--host", "node-1", "-q", "--nats-url", nats.URL()}, sampleRun...), &out, &errOut); code != 0 {
			t.Fatalf("publish exit %d: %s", code, errOut.String())
		}
		m := regexp.MustCompile(`in (\d+) messages`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("publish said %q", out.String())
		}
		n, _ := strconv.Atoi(m[1])
		sent += n
	}
	waitFor(t, "every batch committed", func() bool {
		return srvs[0].Stats().Messages.Load()+srvs[1].Stats().Messages.Load() == int64(sent)
	})
	for _, c := range clocks {
		c.Advance(time.Minute)
	}
	reports := map[string]string{}
	waitFor(t, "a report of every run", func() bool {
		for i, srv := range srvs {
			clocks[i].Tick()
			for _, id := range runs {
				if rr := srv.Scheduler().Report(id); rr != nil && !rr.Partial {
					if _, dup := reports[id+"@"+srv.Coordinator().Member]; !dup {
						reports[id+"@"+srv.Coordinator().Member] = string(rr.MD)
					}
				}
			}
		}
		return len(reports) >= len(runs)
	})
	for _, id := range runs {
		var got []string
		for _, srv := range srvs {
			if md, ok := reports[id+"@"+srv.Coordinator().Member]; ok {
				got = append(got, md)
			}
		}
		if len(got) != 1 {
			t.Errorf("run %s analysed by %d ingestors", id, len(got))
			continue
		}
		var out, errOut bytes.Buffer
		if code := run(ctx, append([]string{"analyze", "-q", "--run", id, "--host", "node-1"}, sampleRun...), &out, &errOut); code != 0 {
			t.Fatalf("analyze exit %d: %s", code, errOut.String())
		}
		if got[0] != out.String() {
			t.Errorf("run %s: served report differs from analyze's:\n%s", id, head(got[0], 15))
		}
	}
	owners := map[string]int{}
	for _, srv := range srvs {
		var n int
		if err := srv.Store().Conn().QueryRowContext(ctx, "SELECT count(DISTINCT run_id) FROM ranks").Scan(&n); err != nil {
			t.Fatal(err)
		}
		owners[srv.Coordinator().Member] = n
	}
	t.Logf("runs per ingestor: %v; batches %d + %d, forwarded %d + %d", owners,
		srvs[0].Stats().Messages.Load(), srvs[1].Stats().Messages.Load(), srvs[0].Stats().Forwarded.Load(), srvs[1].Stats().Forwarded.Load())
	if owners["ing-a"]+owners["ing-b"] != len(runs) {
		t.Errorf("runs stored: %v, want %d in all, each once", owners, len(runs))
	}
}
