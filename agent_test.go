package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// The agent publishes a folder's finished traces once, publishes nothing
// again after a restart, and in trigger mode only the steps asked for.
func TestAgentPublishesOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Setenv("TRAINSCOPE_NATS_LISTEN", "127.0.0.1:0")
	t.Setenv("TRAINSCOPE_AGENT_POLL", "50ms")
	t.Setenv("TRAINSCOPE_AGENT_SETTLE", "100ms")
	cfg, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Serve.DataDir, cfg.Serve.HTTP, cfg.Serve.Flight = t.TempDir(), "127.0.0.1:0", ""
	cfg.Serve.Quiet = 200 * time.Millisecond
	srv, err := startServer(ctx, cfg, mustSet(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()

	watched := t.TempDir()
	for _, f := range sampleRun {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(watched, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	agent := func(args ...string) string {
		var out, errOut bytes.Buffer
		args = append([]string{"agent", "--host", "node-1", "--watch", watched, "--once", "--nats-url", srv.natsURL}, args...)
		if code := run(ctx, args, &out, &errOut); code != 0 {
			t.Fatalf("agent %v: exit %d: %s", args, code, errOut.String())
		}
		return errOut.String()
	}
	log := agent("--run", "a")
	if n := strings.Count(log, "published "); n != 2 {
		t.Fatalf("first pass published %d files, want 2:\n%s", n, log)
	}
	if log := agent("--run", "a"); strings.Contains(log, "published ") {
		t.Fatalf("a restarted agent published again:\n%s", log)
	}
	waitGet(t, "http://"+srv.httpAddr+"/runs/a/report", 20*time.Second)
	want := offlineCount(t, "SELECT count(*) FROM slices")
	if got := srv.count(t, "SELECT count(*) FROM slices WHERE run_id = 'a'"); got != want {
		t.Fatalf("run a has %d slices, analyze loads %d", got, want)
	}

	// trigger mode, with a state file of its own
	agent("--run", "b", "--wait", "552", "--steps", "1", "--state", filepath.Join(t.TempDir(), "b.json"))
	waitGet(t, "http://"+srv.httpAddr+"/runs/b/report", 20*time.Second)
	if got := srv.count(t, "SELECT count(*) FROM slices WHERE run_id = 'b' AND step IS DISTINCT FROM 552"); got != 0 {
		t.Fatalf("trigger mode kept %d slices outside step 552", got)
	}
	want = offlineCount(t, "SELECT count(*) FROM slices WHERE step = 552")
	if got := srv.count(t, "SELECT count(*) FROM slices WHERE run_id = 'b'"); got != want || got == 0 {
		t.Fatalf("trigger mode published %d slices, run a has %d in step 552", got, want)
	}
	if got := srv.count(t, "SELECT count(DISTINCT step) FROM steps WHERE run_id = 'b'"); got != 1 {
		t.Fatalf("trigger mode published %d steps, want 1", got)
	}
}

// offlineCount runs a count query over the sample run loaded as analyze
// loads it.
func offlineCount(t *testing.T, q string) int64 {
	t.Helper()
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := ingest.Load(ctx, st, sampleRun, ingest.Options{RunID: "x", Rank: -1}); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := st.Conn().QueryRowContext(ctx, q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// count runs a count query on the server's store.
func (s *server) count(t *testing.T, q string) int64 {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	if err := s.st.Conn().QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
