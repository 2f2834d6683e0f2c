//go:build duckdb_arrow

package live

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

var sample = []string{"../../bench/sample/rank-0.sampled.pt.trace.json.gz", "../../bench/sample/rank-1.sampled.pt.trace.json.gz"}

// clock is a test's time: it moves only when the test says.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// loaded is a store holding the sample run as run "s" (on host node-s), and a scheduler
// over it whose data lives in a temporary folder.
func loaded(t *testing.T, opts Options) (*duck.Store, *Scheduler, Config) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := duck.Open(ctx, filepath.Join(dir, "db.duckdb"), duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := ingest.Load(ctx, st, sample, ingest.Options{RunID: "s", Host: "node-s", Rank: -1}); err != nil {
		t.Fatal(err)
	}
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{DataDir: dir, Quiet: 2 * time.Second, Timeout: 30 * time.Second}
	return st, New(st, &sync.Mutex{}, set, cfg, opts), cfg
}

func count(t *testing.T, st *duck.Store, q string) int {
	t.Helper()
	var n int
	if err := st.Conn().QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A run is analysed once it has been quiet for Config.Quiet, not before;
// its findings land in the store and its report on disk.
func TestQuietRunIsAnalysedOnce(t *testing.T) {
	ctx := context.Background()
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	st, s, cfg := loaded(t, Options{Now: clk.Now, Logf: t.Logf})
	s.Touched(map[string]bool{"s": true})
	clk.Add(cfg.Quiet / 2)
	s.Step(ctx)
	if s.Report("s") != nil || s.Passes.Load() != 0 {
		t.Fatalf("analysed before the run went quiet")
	}
	clk.Add(cfg.Quiet / 2)
	s.Step(ctx)
	rr := s.Report("s")
	if rr == nil || s.Passes.Load() != 1 || rr.Partial || s.PendingRuns() != 0 {
		t.Fatalf("after %s quiet: report %+v, %d passes, %d pending", cfg.Quiet, rr, s.Passes.Load(), s.PendingRuns())
	}
	if !strings.Contains(string(rr.MD), "# ") || len(rr.JSON) == 0 || !strings.Contains(string(rr.HTML), "<html") {
		t.Errorf("the report's forms: %d md, %d json, %d html bytes", len(rr.MD), len(rr.JSON), len(rr.HTML))
	}
	if n := count(t, st, "SELECT count(*) FROM findings WHERE run_id = 's'"); n != rr.Findings {
		t.Errorf("findings stored %d, report says %d", n, rr.Findings)
	}
	if n := count(t, st, "SELECT count(*) FROM analyses WHERE run_id = 's' AND NOT partial"); n != 1 {
		t.Errorf("analyses rows %d, want 1", n)
	}
	// each GPU's outcome, stamped with the pass's time
	if n := count(t, st, fmt.Sprintf("SELECT count(*) FROM node_history WHERE run_id = 's' AND entity = 'gpu' AND host = 'node-s' AND analyzed_ns = %d", clk.Now().UnixNano())); n != 2 {
		t.Errorf("node_history rows of the pass %d, want one per rank (2)", n)
	}
	for _, ext := range []string{".md", ".json", ".html"} {
		b, err := os.ReadFile(filepath.Join(cfg.DataDir, "reports", "s"+ext))
		if err != nil || len(b) == 0 {
			t.Errorf("report file %s: %v", ext, err)
		}
	}
	s.Step(ctx)
	if s.Passes.Load() != 1 {
		t.Errorf("a run with nothing new was analysed again")
	}
}

// While the stream still holds data of a run, it waits, up to the timeout;
// then its report is partial and it is looked at again until complete.
func TestPendingRunWaitsThenGoesPartial(t *testing.T) {
	ctx := context.Background()
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	why := "3 message(s) of it are still in the stream"
	var mu sync.Mutex
	opts := Options{Now: clk.Now, Logf: t.Logf, PendingWhy: func(context.Context, string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return why, nil
	}}
	st, s, cfg := loaded(t, opts)
	s.Touched(map[string]bool{"s": true})
	clk.Add(cfg.Quiet)
	s.Step(ctx)
	if s.Report("s") != nil {
		t.Fatalf("analysed while data was pending and before the timeout")
	}
	clk.Add(cfg.Timeout)
	s.Step(ctx)
	rr := s.Report("s")
	if rr == nil || !rr.Partial || rr.Status == nil || rr.Status.Reasons[0] != why || s.PartialRuns() != 1 || s.PendingRuns() != 1 {
		t.Fatalf("at the timeout: %+v (partial runs %d, pending %d)", rr, s.PartialRuns(), s.PendingRuns())
	}
	if n := count(t, st, "SELECT count(*) FROM node_history"); n != 0 {
		t.Errorf("a partial pass wrote %d node_history rows", n)
	}
	mu.Lock()
	why = ""
	mu.Unlock()
	clk.Add(time.Millisecond)
	s.Step(ctx)
	if rr := s.Report("s"); rr == nil || rr.Partial || s.PendingRuns() != 0 || s.Passes.Load() != 2 {
		t.Fatalf("once complete: %+v, %d pending, %d passes", rr, s.PendingRuns(), s.Passes.Load())
	}
	if n := count(t, st, "SELECT count(*) FROM node_history WHERE entity = 'gpu'"); n != 2 {
		t.Errorf("the final pass wrote %d node_history GPU rows, want 2", n)
	}
}

// A pending-check that fails does not hold a run back forever: past the
// timeout it is analysed and the report says why it may be partial.
func TestPendingCheckFails(t *testing.T) {
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	_, s, cfg := loaded(t, Options{Now: clk.Now, Logf: t.Logf,
		PendingWhy: func(context.Context, string) (string, error) { return "", errors.New("stream info: timeout") }})
	s.Touched(map[string]bool{"s": true})
	clk.Add(cfg.Timeout)
	s.Step(context.Background())
	rr := s.Report("s")
	if rr == nil || !rr.Partial || !strings.Contains(rr.Status.Reasons[0], "cannot be told: stream info: timeout") {
		t.Fatalf("report %+v", rr)
	}
}

// Data that lands during a pass keeps the run pending: the pass did not
// see it.
func TestCommitDuringPassKeepsRunPending(t *testing.T) {
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	s := New(nil, nil, nil, Config{Quiet: time.Second, Timeout: time.Minute}, Options{Now: clk.Now})
	s.Touched(map[string]bool{"a": true, "b": true})
	clk.Add(time.Second)
	due := s.due(clk.Now())
	if len(due) != 2 || due[0].run != "a" || due[1].run != "b" {
		t.Fatalf("due %+v", due)
	}
	s.Touched(map[string]bool{"a": true})
	s.settle(due[0], false)
	s.settle(due[1], false)
	if s.PendingRuns() != 1 || s.pending["a"] == nil {
		t.Errorf("after a commit to a during its pass: pending %v", s.pending)
	}
}

// A new process serves the reports the last one kept, and analyses again
// the runs that received batches after their last analysis.
func TestRecover(t *testing.T) {
	ctx := context.Background()
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	st, s, cfg := loaded(t, Options{Now: clk.Now, Logf: t.Logf})
	s.Touched(map[string]bool{"s": true})
	clk.Add(cfg.Quiet)
	s.Step(ctx)
	first := s.Report("s")
	if first == nil {
		t.Fatal("no report")
	}
	batch := func(id string, ns int64) {
		t.Helper()
		if err := st.Exec(ctx, `INSERT INTO ingested_batches (msg_id, stream_seq, subject, tbl, run_id, rows, bytes, ingested_ns)
			VALUES (?, 1, 'trainscope.default.s.h.slices_core', 'slices_core', 's', 1, 1, ?)`, id, ns); err != nil {
			t.Fatal(err)
		}
	}
	batch("old", first.At.UnixNano()-1)
	again := New(st, &sync.Mutex{}, s.set, cfg, Options{Now: clk.Now})
	if err := again.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	rr := again.Report("s")
	if rr == nil || string(rr.MD) != string(first.MD) || string(rr.HTML) != string(first.HTML) || rr.Findings != first.Findings || again.PendingRuns() != 0 {
		t.Fatalf("recovered %+v, %d pending", rr, again.PendingRuns())
	}
	batch("new", first.At.UnixNano()+1)
	third := New(st, &sync.Mutex{}, s.set, cfg, Options{Now: clk.Now})
	if err := third.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if third.PendingRuns() != 1 || third.Report("s") == nil {
		t.Errorf("a batch newer than the analysis: %d pending", third.PendingRuns())
	}
}

// A rank with rows but no ranks row (its trace's last batch has not come)
// makes a report partial; rejected batches make it incomplete, and say so.
func TestRunStatus(t *testing.T) {
	ctx := context.Background()
	st, _, _ := loaded(t, Options{})
	if s, err := runStatus(ctx, st, "", nil); err != nil || s != nil {
		t.Fatalf("a complete run: status %+v, %v; want none", s, err)
	}
	if err := st.Exec(ctx, "DELETE FROM ranks WHERE rank = 1"); err != nil {
		t.Fatal(err)
	}
	s, err := runStatus(ctx, st, "", nil)
	if err != nil || s == nil || !s.Partial || len(s.Reasons) != 1 || !strings.Contains(s.Reasons[0], "rank(s) 1 have rows") {
		t.Fatalf("rank 1 without its ranks row: %+v, %v", s, err)
	}
	if err := st.Exec(ctx, `INSERT INTO rejected_batches (stream_seq, subject, msg_id, headers, bytes, reason, rejected_ns, run_token)
		VALUES (9, 'trainscope.default.s.h.ranks', 'x', '', 10, 'undecodable batch: no columns', 1, 's'),
		       (10, 'trainscope.default.other.h.ranks', 'y', '', 10, 'elsewhere', 2, 'other')`); err != nil {
		t.Fatal(err)
	}
	missing, err := rejectedOf(ctx, st, "s")
	if err != nil || len(missing) != 1 || !strings.HasPrefix(missing[0], "1 batch(es) of this run were rejected") || !strings.Contains(missing[0], "no columns") {
		t.Fatalf("rejected: %q, %v", missing, err)
	}
}

func TestFileToken(t *testing.T) {
	long := strings.Repeat("job-", 70)
	a, b := FileToken(long+"a"), FileToken(long+"b")
	if len(a) > 120 || a == b || !strings.HasPrefix(a, "job-job-") {
		t.Errorf("report file names %q and %q", a, b)
	}
	for in, want := range map[string]string{"run/1": "run%2F1", `a\b:c`: "a%5Cb%3Ac", "plain": "plain", "run_1": "run_1"} {
		if got := FileToken(in); got != want {
			t.Errorf("FileToken(%q) = %q, want %q", in, got, want)
		}
	}
}
