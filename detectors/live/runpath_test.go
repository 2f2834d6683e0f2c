//go:build duckdb_arrow

package live

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/trainscope/trainscope/sql/duck"
)

// analysedRuns is a store in which runs were analysed (their batches and
// an analysis recorded, no rows), and a scheduler over it.
func analysedRuns(t *testing.T, runs ...string) (*duck.Store, Config) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := duck.Open(ctx, filepath.Join(dir, "db.duckdb"), duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for i, run := range runs {
		if err := st.Exec(ctx, `INSERT INTO ingested_batches (msg_id, stream_seq, subject, tbl, run_id, rows, bytes, ingested_ns)
			VALUES (?, ?, 'trainscope.default.r.h.slices_core', 'slices_core', ?, 1, 1, 1)`, run, i+1, run); err != nil {
			t.Fatal(err)
		}
		if err := st.Exec(ctx, insertAnalysis, run, 2, nil, nil, 1, 0, 1.0, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	return st, Config{DataDir: dir}
}

func reportJSON(run string) []byte {
	b, _ := json.Marshal(map[string]any{"runs": []map[string]string{{"run_id": run}}})
	return b
}

// Runs whose ids differ only in punctuation keep reports of their own on
// disk, and a new process serves each its own; an id of letters, digits,
// '-' and '_' keeps its file name.
func TestReportFilesOfPunctuationRuns(t *testing.T) {
	runs := []string{"x/y", "x_y", "exp.1", "exp_1", `a\b`, "a:b", "run-7_b"}
	st, cfg := analysedRuns(t, runs...)
	s := New(st, &sync.Mutex{}, nil, cfg, Options{})
	for _, run := range runs {
		if err := s.save(&Report{Run: run, MD: []byte("report of " + run), JSON: reportJSON(run), HTML: []byte("<p>" + run)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"x%2Fy.md", "x_y.md", "exp%2E1.json", "exp_1.html", "a%5Cb.md", "a%3Ab.md", "run-7_b.md"} {
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "reports", name)); err != nil {
			t.Error(err)
		}
	}
	again := New(st, &sync.Mutex{}, nil, cfg, Options{})
	if err := again.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, run := range runs {
		rr := again.Report(run)
		if rr == nil || string(rr.MD) != "report of "+run || string(rr.JSON) != string(reportJSON(run)) || string(rr.HTML) != "<p>"+run {
			t.Errorf("run %q: recovered %+v", run, rr)
		}
	}
}

// Reports a build before this one kept under names runs shared (x/y's as
// x_y.md, exp.1's as exp.1.md) are served to their own run, moved to
// their new names; a report in a shared file that is another run's is not.
func TestReportFilesOfEarlierBuilds(t *testing.T) {
	st, cfg := analysedRuns(t, "x/y", "x_y", "exp.1", "p/q", "p_q")
	dir := filepath.Join(cfg.DataDir, "reports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// x/y was saved after x_y (its report replaced x_y's); p_q after p/q
	for name, run := range map[string]string{"x_y": "x/y", "exp.1": "exp.1", "p_q": "p_q"} {
		for ext, b := range map[string][]byte{".md": []byte("report of " + run), ".json": reportJSON(run)} {
			if err := os.WriteFile(filepath.Join(dir, name+ext), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := New(st, &sync.Mutex{}, nil, cfg, Options{})
	if err := s.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	for run, want := range map[string]string{"x/y": "report of x/y", "x_y": "", "exp.1": "report of exp.1", "p/q": "", "p_q": "report of p_q"} {
		got := ""
		if rr := s.Report(run); rr != nil {
			got = string(rr.MD)
		}
		if got != want {
			t.Errorf("run %q: report %q, want %q", run, got, want)
		}
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	if len(names) != 3 || names[0] != "exp%2E1.md" || names[1] != "p_q.md" || names[2] != "x%2Fy.md" {
		t.Errorf("report files after recovering: %v", names)
	}
}
