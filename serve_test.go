package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/server"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream/transport"
)

// TestMain lets the test binary stand in for the trainscope binary: the
// kill tests start it as a child process and SIGKILL it.
func TestMain(m *testing.M) {
	if os.Getenv("TRAINSCOPE_AS_MAIN") == "1" {
		ctx, stop := cli.SignalContext()
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

var sampleRun = []string{"bench/sample/rank-0.sampled.pt.trace.json.gz", "bench/sample/rank-1.sampled.pt.trace.json.gz"}

// serve, publish and the HTTP endpoints together, in process: the report
// served for a run equals the one analyze prints for the same traces. The
// scheduler's clock is the test's: the run is analysed once, after all of
// it has been stored, however slow the machine (under load the quiet
// timer used to fire between two files and the run was analysed twice).
func TestServePublishReport(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	t.Setenv("TRAINSCOPE_NATS_LISTEN", "127.0.0.1:0")
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Serve.DataDir, cfg.Serve.HTTP, cfg.Serve.Flight = dir, "127.0.0.1:0", ""
	// the slices as staged files, the default: the passes read them
	// (TestServeSurvivesSIGKILL also keeps them in DuckDB)
	cfg.Serve.Staged = true
	clk := newTestClock()
	srv, err := server.Start(ctx, cfg, mustSet(t), t.Logf, server.WithClock(clk.Now, clk.ticks))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()

	// with a memory snapshot of rank 0 from the corpus: memory findings
	// travel the same way
	files := append([]string(nil), sampleRun...)
	snap, err := filepath.Abs(corpus.Path(t, "memsnap/magma27_memory_snapshot.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "rank-0.memory_snapshot.json.gz")
	if err := os.Symlink(snap, link); err != nil {
		t.Fatal(err)
	}
	files = append(files, link)
	// and the run's launch script: its config audit lands in the same report
	files = append(files, corpus.Path(t, "scripts/relax/scripts/training/text/run-qwen3-30B-A3B-16xgpu-async.sh"))
	// and a saved dcgm-exporter scrape: its samples travel into counters
	files = append(files, corpus.Path(t, "dcgm/scrape_ericsson-ccd__accelerator_metrics.prom"))
	var out, errOut bytes.Buffer
	if code := run(ctx, append([]string{"publish", "--run", "live", "--host", "node-1", "-q", "--nats-url", srv.NATSURL()}, files...), &out, &errOut); code != 0 {
		t.Fatalf("publish exit %d: %s", code, errOut.String())
	}
	m := regexp.MustCompile(`published run live: \d files, \d+ rows in (\d+) messages`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("publish said %q", out.String())
	}
	sent, _ := strconv.Atoi(m[1])
	waitFor(t, "every published message stored", func() bool { return srv.Stats().Messages.Load() == int64(sent) })
	if srv.Scheduler().Passes.Load() != 0 {
		t.Fatalf("analysed before the test's clock said the run was quiet")
	}
	clk.Advance(cfg.Serve.Quiet)
	base := "http://" + srv.HTTPAddr()
	// ticks until the consumer's acknowledgements have reached the server
	// (the run is final once its last message is below the ack floor)
	waitFor(t, "a report", func() bool { clk.Tick(); return srv.Scheduler().Report("live") != nil })
	got := get(t, base+"/runs/live/report")

	out.Reset()
	if code := run(ctx, append([]string{"analyze", "-q", "--run", "live", "--host", "node-1"}, files...), &out, &errOut); code != 0 {
		t.Fatalf("analyze exit %d: %s", code, errOut.String())
	}
	if got != out.String() {
		t.Fatalf("served report differs from analyze's:\n--- served\n%s\n--- analyze\n%s", head(got, 20), head(out.String(), 20))
	}
	// the HTML page is the same report: analyze --format html writes it too
	out.Reset()
	if code := run(ctx, append([]string{"analyze", "-q", "--format", "html", "--run", "live", "--host", "node-1"}, files...), &out, &errOut); code != 0 {
		t.Fatalf("analyze --format html exit %d: %s", code, errOut.String())
	}
	if page := get(t, base+"/runs/live/report.html"); page != out.String() || !strings.HasPrefix(page, "<!DOCTYPE html>") {
		t.Errorf("served HTML report differs from analyze --format html's:\n%s", head(page, 20))
	}
	if !strings.Contains(got, "mem_reserved_unused") {
		t.Errorf("served report has no memory findings:\n%s", head(got, 40))
	}
	if !strings.Contains(got, "R-P03") {
		t.Errorf("served report has no config audit findings")
	}
	var n int
	if err := srv.Store().Conn().QueryRowContext(ctx, "SELECT count(*) FROM counters WHERE run_id = 'live' AND host = 'cp-bm14r7' AND metric LIKE 'DCGM_FI_%'").Scan(&n); err != nil || n != 20 {
		t.Errorf("counters from the published scrape: %d rows (%v), want 20", n, err)
	}
	metrics := get(t, base+"/metrics")
	for _, want := range []string{"trainscope_detector_runs_total 1", "trainscope_detector_errors_total 0", "trainscope_detector_partial_runs 0",
		"trainscope_ingest_rejected_total 0", "trainscope_ingest_lag_messages 0", "trainscope_ingest_consumer_up 1",
		// one pass, and every published batch's publish -> commit latency
		"trainscope_detector_pass_seconds_count 1", fmt.Sprintf("trainscope_ingest_latency_seconds_count %d", sent),
		`trainscope_ingest_latency_seconds_bucket{le="+Inf"} ` + strconv.Itoa(sent)} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, metrics)
		}
	}
	// Go runtime and process metrics come with Prometheus' client
	for _, want := range []string{"go_goroutines ", "go_memstats_heap_alloc_bytes ", "process_resident_memory_bytes ", "# TYPE trainscope_ingest_latency_seconds histogram"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// the report above was made from staged files
	var stagedFiles int
	if err := srv.Store().Conn().QueryRowContext(ctx, "SELECT count(*) FROM staged_files WHERE run_id = 'live'").Scan(&stagedFiles); err != nil || stagedFiles == 0 {
		t.Errorf("%d staged files of run live (%v): the slices did not go through files", stagedFiles, err)
	}
	// the store checkpoints its write-ahead log (serve.checkpoint_wal, 256MB)
	var wal string
	if err := srv.Store().Conn().QueryRowContext(ctx, "SELECT current_setting('checkpoint_threshold')").Scan(&wal); err != nil || wal != "244.1 MiB" {
		t.Errorf("the store's checkpoint_threshold is %q (%v), want 256MB (244.1 MiB)", wal, err)
	}
	if h := get(t, base+"/healthz"); !strings.Contains(h, `"status":"ok"`) {
		t.Errorf("/healthz: %s", h)
	}
	if r, err := http.Get(base + "/runs/nope/report"); err != nil || r.StatusCode != 404 {
		t.Errorf("/runs/nope/report: %v %v", r.StatusCode, err)
	}
}

// testClock is the serve scheduler's clock in tests: time moves when the
// test says, and the scheduler looks for due runs when the test ticks.
type testClock struct {
	mu    sync.Mutex
	t     time.Time
	ticks chan time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), ticks: make(chan time.Time)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Tick makes the scheduler look for due runs, and returns once that look
// (and any pass it started) is over: the scheduler takes a tick only
// between looks, so the second send waits for the first look to end.
func (c *testClock) Tick() {
	c.ticks <- c.Now()
	c.ticks <- c.Now()
}

// waitFor polls cond until it holds: it waits for an event, with a bound
// (a minute) that only a broken server reaches.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustSet(t *testing.T) *detectors.Set {
	t.Helper()
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func head(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

func get(t *testing.T, url string) string {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

func waitGet(t *testing.T, url string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		r, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode == 200 {
				return string(b)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: no answer within %s", url, limit)
	return ""
}

// Kill the serving process with SIGKILL at random moments while a
// publisher streams four 2-rank runs, restart it, ten times: the tables
// end up exactly as analyze loads them, with nothing twice; with the
// slices in DuckDB and staged as files (serve.staged).
func TestServeSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills processes")
	}
	for _, staged := range []bool{false, true} {
		t.Run(fmt.Sprint("staged=", staged), func(t *testing.T) { serveSurvivesSIGKILL(t, staged) })
	}
}

func serveSurvivesSIGKILL(t *testing.T, staged bool) {
	nats, err := transport.StartEmbedded(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer nats.Stop()
	dataDir := t.TempDir()
	env := append(os.Environ(), "TRAINSCOPE_AS_MAIN=1", "TRAINSCOPE_NATS_URL="+nats.URL(),
		"TRAINSCOPE_INGEST_FETCH_BYTES=1048576", "TRAINSCOPE_INGEST_ACK_WAIT=2s", "TRAINSCOPE_PUBLISH_MESSAGE_BYTES=65536",
		fmt.Sprint("TRAINSCOPE_SERVE_STAGED=", staged))
	runs := []string{"k0", "k1", "k2", "k3"}

	// the publisher streams run after run while the server dies and returns
	var wg sync.WaitGroup
	pubErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, r := range runs {
			cmd := exec.Command(os.Args[0], append([]string{"publish", "-q", "--run", r, "--host", "node-1"}, sampleRun...)...)
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				pubErr <- fmt.Errorf("publish %s: %v: %s", r, err, out)
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	for i := range 10 {
		p := startServe(t, env, dataDir)
		time.Sleep(time.Duration(150+rng.IntN(600)) * time.Millisecond)
		p.Process.Signal(syscall.SIGKILL)
		p.Wait()
		t.Logf("kill %d done", i+1)
	}
	wg.Wait()
	// the kills came while batches were arriving: some, not all, are in
	if st, err := duck.Open(context.Background(), filepath.Join(dataDir, "trainscope.duckdb"), duck.Options{ReadOnly: true}); err == nil {
		var n int64
		st.Conn().QueryRowContext(context.Background(), "SELECT count(*) FROM ingested_batches").Scan(&n)
		st.Close()
		t.Logf("%d batches committed by the killed servers", n)
	}
	select {
	case err := <-pubErr:
		t.Fatal(err)
	default:
	}
	// a last server drains the stream, then stops cleanly
	p := startServe(t, env, dataDir)
	waitDrained(t, nats.URL())
	p.Process.Signal(syscall.SIGTERM)
	if err := p.Wait(); err != nil {
		t.Fatalf("serve did not stop cleanly: %v", err)
	}

	ctx := context.Background()
	st, err := duck.Open(ctx, filepath.Join(dataDir, "trainscope.duckdb"), duck.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	want, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	for _, r := range runs {
		if _, err := ingest.Load(ctx, want, sampleRun, ingest.Options{RunID: r, Host: "node-1", Rank: -1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tbl := range []string{"slices_core", "slices_detail", "steps", "counters", "ranks", "threads", "stacks", "process_groups", "runs"} {
		q := fmt.Sprintf("SELECT count(*), coalesce(sum(hash(s)::HUGEINT), 0)::VARCHAR FROM %s s", tbl)
		var n1, n2 int64
		var h1, h2 string
		if err := st.Conn().QueryRowContext(ctx, q).Scan(&n1, &h1); err != nil {
			t.Fatal(err)
		}
		if err := want.Conn().QueryRowContext(ctx, q).Scan(&n2, &h2); err != nil {
			t.Fatal(err)
		}
		if n1 != n2 || h1 != h2 {
			t.Errorf("%s: served %d rows (hash %s), analyze %d (hash %s)", tbl, n1, h1, n2, h2)
		}
	}
	// the slices came through staged files when staged, none left half-made
	var files int64
	st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM staged_files").Scan(&files)
	tmps, _ := filepath.Glob(filepath.Join(dataDir, "trainscope.staged", "*", "*", "*"+duck.StagedTmp))
	if (files > 0) != staged || len(tmps) > 0 {
		t.Errorf("%d staged files recorded, %d left as %s: %v", files, len(tmps), duck.StagedTmp, tmps)
	}
	var dups int64
	st.Conn().QueryRowContext(ctx, "SELECT count(*) - count(DISTINCT msg_id) FROM ingested_batches").Scan(&dups)
	if dups != 0 {
		t.Errorf("%d batch ids recorded twice", dups)
	}
}

// startServe starts the test binary as 'trainscope serve' and waits until
// it says it is serving.
func startServe(t *testing.T, env []string, dataDir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--data-dir", dataDir, "--http", "127.0.0.1:0", "--flight", "off", "--quiet", "300ms")
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "serving:") {
				said = true
				ready <- true
			}
			if testing.Verbose() {
				t.Log("serve: " + sc.Text())
			}
		}
		if !said {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatalf("serve exited before serving")
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve did not start within 30 s")
	}
	return cmd
}

// waitDrained waits until the ingest consumer has nothing pending.
func waitDrained(t *testing.T, url string) {
	t.Helper()
	nc, err := transport.Connect(transport.NATSConfig{URL: url}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		c, err := js.Consumer(ctx, transport.DefaultStream.Name, ingest.DefaultConsumer.Durable)
		if err == nil {
			info, err := c.Info(ctx)
			if err == nil && info.NumPending == 0 && info.NumAckPending == 0 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the stream was not drained within 60 s")
}
