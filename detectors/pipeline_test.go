package detectors_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// Analyze is the pipeline analyze, report and the live pass share: its
// report is the one Run and BuildReport give, it saves the root causes and
// node outcomes, tells OnFailure of each failed detector, and leaves no
// shared view computed, on one connection or several, whether it succeeds
// or stops after the window. Run alone leaves none either: there is no
// protocol a caller must finish.
func TestAnalyzeIsThePipeline(t *testing.T) {
	ctx := context.Background()
	dir := throttledRank3().write(t)
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "zz_raises.sql"), []byte(`-- name: zz_raises
-- category: utilization
-- kind: metric
-- description: a metric detector whose query raises
SELECT run_id, rank, error('boom')::DOUBLE AS x FROM ranks
`), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(t *testing.T, workers int, dirs ...string) (*duck.Store, *detectors.Set) {
		st, err := duck.Open(ctx, "", duck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		files, err := ingest.Discover([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: "pipe", Rank: -1}); err != nil {
			t.Fatal(err)
		}
		set, err := detectors.NewSet(detectors.Config{Dirs: dirs})
		if err != nil {
			t.Fatal(err)
		}
		set.Workers = workers
		return st, set
	}
	leftOver := func(t *testing.T, st *duck.Store, when string) {
		t.Helper()
		var tables, renamed int
		if err := st.Conn().QueryRowContext(ctx, `SELECT
			(SELECT count(*) FROM duckdb_tables() WHERE table_name IN ('gpu_span', 'gpu_busy', 'collective_instances', 'gpu_samples', 'kernel_profiles')),
			(SELECT count(*) FROM duckdb_views() WHERE view_name LIKE '%\_\_view' ESCAPE '\')`).Scan(&tables, &renamed); err != nil {
			t.Fatal(err)
		}
		if tables != 0 || renamed != 0 {
			t.Errorf("%s: %d shared tables and %d renamed views left", when, tables, renamed)
		}
	}
	count := func(t *testing.T, st *duck.Store, table string) int {
		var n int
		if err := st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	for _, workers := range []int{1, 4} {
		// Run, then BuildReport: the views are released after Run
		st, set := load(t, workers)
		if err := detectors.SetWindow(ctx, st, detectors.Window{}); err != nil {
			t.Fatal(err)
		}
		res, err := set.Run(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		leftOver(t, st, "after Run")
		rep, err := detectors.BuildReport(ctx, st, res)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(rep)

		st, set = load(t, workers, bad)
		var failed []string
		rep, err = detectors.Analyze(ctx, st, set, detectors.AnalyzeOptions{
			OnFailure: func(f report.DetectorFailure) { failed = append(failed, f.Detector) },
			Status:    &report.RunStatus{Missing: []string{"batch 7 of r0.json never arrived"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		leftOver(t, st, "after Analyze")
		if len(failed) != 1 || failed[0] != "zz_raises" {
			t.Errorf("workers %d: OnFailure heard %v, want zz_raises", workers, failed)
		}
		if rep.Status == nil || len(rep.Status.Missing) != 1 {
			t.Errorf("workers %d: the status is not the report's: %+v", workers, rep.Status)
		}
		rep.Status, rep.Failed = nil, nil
		if got, _ := json.Marshal(rep); string(got) != string(want) {
			t.Errorf("workers %d: Analyze's report differs from Run and BuildReport's:\n%s\n%s", workers, got, want)
		}
		if len(rep.Causes) == 0 || count(t, st, "root_causes") != len(rep.Causes) {
			t.Errorf("workers %d: %d root_causes rows for %d causes", workers, count(t, st, "root_causes"), len(rep.Causes))
		}
		if count(t, st, "node_history") == 0 {
			t.Errorf("workers %d: no node_history rows saved", workers)
		}

		// a pass stopped after the window runs no detector
		st, set = load(t, workers)
		stop := errors.New("no such steps")
		if _, err := detectors.Analyze(ctx, st, set, detectors.AnalyzeOptions{
			AfterWindow: func(context.Context, *duck.Store) error { return stop },
		}); !errors.Is(err, stop) {
			t.Errorf("workers %d: AfterWindow's error came back as %v", workers, err)
		}
		if n := count(t, st, "metrics"); n != 0 {
			t.Errorf("workers %d: %d metric rows after a pass stopped at the window", workers, n)
		}
		leftOver(t, st, "after a stopped Analyze")
	}
}
