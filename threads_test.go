package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/server"
)

// manyCores are the core counts of GPU servers the threads knob stands in
// for on a small machine: a typical node, a large one, and the largest.
var manyCores = []int{16, 64, 192}

// analyze, report and diff give the same output whatever core count they
// plan for. Before the knob analyze sized its detector workers from the
// machine's cores and the database's connections from a constant 8, so
// on a machine of more than 8 cores the ninth connection waited forever.
func TestThreadsSameReport(t *testing.T) {
	dir := t.TempDir()
	base := func(n int, args ...string) string {
		t.Helper()
		args = append(args, "--threads", strconv.Itoa(n))
		code, out, errOut := trainscope(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	analyze := func(n int) string {
		return base(n, append([]string{"analyze", "-q", "--format", "json", "--run", "s"}, sampleRun...)...)
	}
	db := filepath.Join(dir, "run.duckdb")
	base(2, append([]string{"analyze", "-q", "--run", "s", "--db", db}, sampleRun...)...)
	report := func(n int) string { return base(n, "report", "--db", db, "--format", "json") }
	diff := func(n int) string { return base(n, "diff", "-q", "--format", "json", sampleRun[0], sampleRun[1]) }
	for _, c := range []struct {
		cmd string
		run func(int) string
	}{{"analyze", analyze}, {"report", report}, {"diff", diff}} {
		want := c.run(2)
		if len(want) < 1000 {
			t.Fatalf("%s --threads 2 wrote only %q", c.cmd, want)
		}
		for _, n := range manyCores {
			if got := c.run(n); got != want {
				t.Errorf("%s --threads %d differs from --threads 2:\n%s\n---\n%s", c.cmd, n, head(got, 15), head(want, 15))
			}
		}
	}
}

// A bad --threads is a usage error that names the flag; the threads key is
// checked the same way.
func TestThreadsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"analyze", "--threads", "-1", sampleRun[0]},
		{"report", "--threads", "100000", "--db", "x.duckdb"},
		{"diff", "--threads", "-4", sampleRun[0], sampleRun[1]},
	} {
		code, _, errOut := trainscope(t, args...)
		if code != 2 || !strings.Contains(errOut, "--threads") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
	t.Setenv("TRAINSCOPE_THREADS", "-3")
	if code, _, errOut := trainscope(t, "analyze", "-q", sampleRun[0]); code != 2 || !strings.Contains(errOut, "threads: -3") {
		t.Errorf("TRAINSCOPE_THREADS=-3: exit %d, %q", code, errOut)
	}
	t.Setenv("TRAINSCOPE_THREADS", "192")
	cfg, err := config.Load("")
	if err != nil || cfg.Cores() != 192 || cfg.DuckThreads() != 192 {
		t.Errorf("TRAINSCOPE_THREADS=192: cores %d (%v)", cfg.Cores(), err)
	}
	cfg.DuckDB.Threads = 4
	if cfg.DuckThreads() != 4 {
		t.Errorf("duckdb.threads 4 under threads 192: DuckDB gets %d", cfg.DuckThreads())
	}
}

// serve on a GPU server's core count: the pass over a published run (its
// detectors side by side, one connection a core, bounded by the pool)
// gives the report analyze gives on two.
func TestServeThreads(t *testing.T) {
	for _, n := range []int{16, 192} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			t.Setenv("TRAINSCOPE_NATS_LISTEN", "127.0.0.1:0")
			cfg, err := config.Load("")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Serve.DataDir, cfg.Serve.HTTP, cfg.Serve.Flight = t.TempDir(), "127.0.0.1:0", ""
			cfg.Threads = n
			clk := newTestClock()
			srv, err := server.Start(ctx, cfg, mustSet(t), t.Logf, server.WithClock(clk.Now, clk.ticks))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Shutdown()
			var out, errOut bytes.Buffer
			if code := run(ctx, append([]string{"publish", "--run", "live", "-q", "--nats-url", srv.NATSURL()}, sampleRun...), &out, &errOut); code != 0 {
				t.Fatalf("publish exit %d: %s", code, errOut.String())
			}
			m := regexp.MustCompile(`in (\d+) messages`).FindStringSubmatch(out.String())
			if m == nil {
				t.Fatalf("publish said %q", out.String())
			}
			sent, _ := strconv.Atoi(m[1])
			waitFor(t, "every published message stored", func() bool { return srv.Stats().Messages.Load() == int64(sent) })
			clk.Advance(cfg.Serve.Quiet)
			waitFor(t, "a report", func() bool { clk.Tick(); return srv.Scheduler().Report("live") != nil })
			got := get(t, "http://"+srv.HTTPAddr()+"/runs/live/report")
			code, want, errText := trainscope(t, append([]string{"analyze", "-q", "--run", "live", "--threads", "2"}, sampleRun...)...)
			if code != 0 {
				t.Fatalf("analyze: exit %d %s", code, errText)
			}
			if got != want {
				t.Errorf("served with threads %d differs from analyze --threads 2:\n%s\n---\n%s", n, head(got, 20), head(want, 20))
			}
		})
	}
}
