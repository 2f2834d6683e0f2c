package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/server"
	"github.com/trainscope/trainscope/sql/duck"
)

// The agent publishes a folder's finished traces once, publishes nothing
// again after a restart, and in trigger mode only the steps asked for.
func TestAgentPublishesOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := agentServer(ctx, t)
	defer srv.Shutdown()

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
		args = append([]string{"agent", "--host", "node-1", "--watch", watched, "--once", "--nats-url", srv.NATSURL()}, args...)
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
	waitGet(t, "http://"+srv.HTTPAddr()+"/runs/a/report", 20*time.Second)
	want := offlineCount(t, "SELECT count(*) FROM slices")
	if got := storeCount(t, srv, "SELECT count(*) FROM slices WHERE run_id = 'a'"); got != want {
		t.Fatalf("run a has %d slices, analyze loads %d", got, want)
	}

	// trigger mode, with a state file of its own
	agent("--run", "b", "--wait", "552", "--steps", "1", "--state", filepath.Join(t.TempDir(), "b.json"))
	waitGet(t, "http://"+srv.HTTPAddr()+"/runs/b/report", 20*time.Second)
	if got := storeCount(t, srv, "SELECT count(*) FROM slices WHERE run_id = 'b' AND step IS DISTINCT FROM 552"); got != 0 {
		t.Fatalf("trigger mode kept %d slices outside step 552", got)
	}
	want = offlineCount(t, "SELECT count(*) FROM slices WHERE step = 552")
	if got := storeCount(t, srv, "SELECT count(*) FROM slices WHERE run_id = 'b'"); got != want || got == 0 {
		t.Fatalf("trigger mode published %d slices, run a has %d in step 552", got, want)
	}
	if got := storeCount(t, srv, "SELECT count(DISTINCT step) FROM steps WHERE run_id = 'b'"); got != 1 {
		t.Fatalf("trigger mode published %d steps, want 1", got)
	}
}

// agentServer starts a serve on free local ports for agents to publish
// to (agents watch folders every 50 ms and take files settled for 100 ms);
// the caller stops it.
func agentServer(ctx context.Context, t *testing.T) *server.Server {
	t.Helper()
	t.Setenv("TRAINSCOPE_NATS_LISTEN", "127.0.0.1:0")
	t.Setenv("TRAINSCOPE_AGENT_POLL", "50ms")
	t.Setenv("TRAINSCOPE_AGENT_SETTLE", "100ms")
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Serve.DataDir, cfg.Serve.HTTP, cfg.Serve.Flight = t.TempDir(), "127.0.0.1:0", ""
	cfg.Serve.Quiet = 200 * time.Millisecond
	srv, err := server.Start(ctx, cfg, mustSet(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	return srv
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

// storeCount runs a count query on the server's store.
func storeCount(t *testing.T, s *server.Server, q string) int64 {
	t.Helper()
	s.StoreLock().Lock()
	defer s.StoreLock().Unlock()
	var n int64
	if err := s.Store().Conn().QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// While it watches, the agent samples GPU counters: here a dcgm-exporter
// endpoint, whose samples reach the server as counters of the run. On this
// machine (no NVIDIA driver) the default, NVML, says so once and the agent
// goes on publishing traces.
func TestAgentSamplesCounters(t *testing.T) {
	raw, err := os.ReadFile(corpus.Path(t, "dcgm/scrape_ericsson-ccd__accelerator_metrics.prom"))
	if err != nil {
		t.Fatal(err)
	}
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(raw) }))
	defer exporter.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := agentServer(ctx, t)
	defer srv.Shutdown()
	agent := func(runID string, watched string, counters ...string) (stop func() string) {
		actx, acancel := context.WithCancel(ctx)
		var out, errOut syncBuffer
		done := make(chan int)
		args := append([]string{"agent", "--run", runID, "--host", "node-1", "--watch", watched, "--nats-url", srv.NATSURL()}, counters...)
		go func() { done <- run(actx, args, &out, &errOut) }()
		return func() string {
			acancel()
			if code := <-done; code != 0 {
				t.Errorf("agent %v: exit %d: %s", args, code, errOut.String())
			}
			return errOut.String()
		}
	}
	stop := agent("c", t.TempDir(), "--counters", exporter.URL, "--counters-period", "20ms", "--counters-flush", "100ms")
	deadline := time.Now().Add(20 * time.Second)
	for storeCount(t, srv, "SELECT count(*) FROM counters WHERE run_id = 'c'") < 40 {
		if time.Now().After(deadline) {
			t.Fatal("no counters from the exporter reached the server")
		}
		time.Sleep(20 * time.Millisecond)
	}
	log := stop()
	if got := storeCount(t, srv, `SELECT count(*) FROM counters WHERE run_id = 'c' AND host = 'node-1' AND device = 0
		AND metric = 'DCGM_FI_DEV_SM_CLOCK' AND value = 660 AND (labels->>'Hostname') = 'cp-bm14r7'`); got < 2 {
		t.Errorf("%d SM clock samples of gpu 0 with the exporter's labels, want every scrape's", got)
	}
	if !strings.Contains(log, "counters: scraping "+exporter.URL) || !strings.Contains(log, "counters: published ") {
		t.Errorf("agent log:\n%s", log)
	}

	// the default: NVML, absent here
	watched := t.TempDir()
	b, err := os.ReadFile(sampleRun[0])
	if err != nil {
		t.Fatal(err)
	}
	stop = agent("d", watched)
	if err := os.WriteFile(filepath.Join(watched, filepath.Base(sampleRun[0])), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for storeCount(t, srv, "SELECT count(*) FROM ranks WHERE run_id = 'd'") == 0 {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatal("the agent without NVML published no trace")
		}
		time.Sleep(20 * time.Millisecond)
	}
	log = stop()
	if _, err := gpu.OpenNVML(nvml.New(), "", nil); err == nil {
		return // a GPU machine: the agent sampled it
	}
	if !strings.Contains(log, "counters: NVML (libnvidia-ml.so.1) cannot be loaded") || !strings.Contains(log, "publishing traces without GPU counters") {
		t.Errorf("agent log without NVML:\n%s", log)
	}
}

// syncBuffer is a bytes.Buffer that a running command and a test may use
// at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// One agent for a node that many jobs share: --runs-in publishes each
// subfolder as the run it is named after, and a restarted agent publishes
// nothing twice.
func TestAgentWatchesRunFolders(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := agentServer(ctx, t)
	defer srv.Shutdown()
	root := t.TempDir()
	for _, run := range []string{"job-a", "job-b"} {
		if err := os.MkdirAll(filepath.Join(root, run), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range sampleRun {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, run, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// not a run: a hidden folder, a loose file
	os.MkdirAll(filepath.Join(root, ".cache"), 0o755)
	os.WriteFile(filepath.Join(root, "README"), []byte("x"), 0o644)
	agent := func(args ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := run(ctx, append([]string{"agent", "--host", "node-1", "--nats-url", srv.NATSURL()}, args...), &out, &errOut)
		return errOut.String(), code
	}
	log, code := agent("--runs-in", root, "--once")
	if code != 0 {
		t.Fatalf("agent: exit %d: %s", code, log)
	}
	if n := strings.Count(log, "published "); n != 4 {
		t.Fatalf("published %d files, want 2 per run:\n%s", n, log)
	}
	if log, _ := agent("--runs-in", root, "--once"); strings.Contains(log, "published ") {
		t.Fatalf("a restarted agent published again:\n%s", log)
	}
	want := offlineCount(t, "SELECT count(*) FROM slices")
	for _, run := range []string{"job-a", "job-b"} {
		waitGet(t, "http://"+srv.HTTPAddr()+"/runs/"+run+"/report", 20*time.Second)
		if got := storeCount(t, srv, "SELECT count(*) FROM slices WHERE run_id = '"+run+"'"); got != want {
			t.Errorf("run %s has %d slices, analyze loads %d", run, got, want)
		}
	}
	if log, code := agent("--runs-in", root, "--run", "x"); code != 2 || !strings.Contains(log, "without --run") {
		t.Errorf("--runs-in with --run: exit %d: %s", code, log)
	}
}
