package detectors_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// Detectors run on several connections at once give the report they give
// one by one, and leave the shared views as views, ready for the next pass.
//
// More workers than the database has connections (a 192-core server
// against the default pool of 8) run on the connections there are; so do
// workers whose connections someone else holds. Before, the ninth fork
// waited for a connection forever.
func TestParallelRunMatchesSequential(t *testing.T) {
	ctx := context.Background()
	dir := throttledRank3().write(t)
	report := func(workers, held int) []byte {
		st, err := duck.Open(ctx, "", duck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for range held {
			f, err := st.Fork(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
		}
		files, err := ingest.Discover([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: "par", Rank: -1}); err != nil {
			t.Fatal(err)
		}
		set, err := detectors.NewSet(detectors.Config{})
		if err != nil {
			t.Fatal(err)
		}
		set.Workers = workers
		var out []byte
		for pass := range 2 { // a second pass finds the views as the first left them
			if err := detectors.SetWindow(ctx, st, detectors.Window{}); err != nil {
				t.Fatal(err)
			}
			res, err := set.Run(ctx, st)
			if err != nil {
				t.Fatalf("workers %d, pass %d: %v", workers, pass, err)
			}
			for _, r := range res {
				if r.Err != nil {
					t.Errorf("workers %d: %s: %v", workers, r.Detector.Name, r.Err)
				}
			}
			rep, err := detectors.BuildReport(ctx, st, res)
			if err != nil {
				t.Fatal(err)
			}
			if out, err = json.Marshal(rep); err != nil {
				t.Fatal(err)
			}
			var tables, renamed int
			if err := st.Conn().QueryRowContext(ctx, `SELECT
				(SELECT count(*) FROM duckdb_tables() WHERE table_name IN ('gpu_busy', 'collective_instances', 'gpu_samples')),
				(SELECT count(*) FROM duckdb_views() WHERE view_name LIKE '%\_\_view' ESCAPE '\')`).Scan(&tables, &renamed); err != nil {
				t.Fatal(err)
			}
			if tables != 0 || renamed != 0 {
				t.Fatalf("workers %d: after the report %d shared tables and %d renamed views are left", workers, tables, renamed)
			}
		}
		return out
	}
	one := report(1, 0)
	for _, c := range []struct{ workers, held int }{{3, 0}, {192, 0}, {4, duck.DefaultMaxConns - 1}, {64, duck.DefaultMaxConns - 2}} {
		if got := report(c.workers, c.held); string(got) != string(one) {
			t.Errorf("%d workers' report (%d connections held elsewhere) differs from 1 worker's:\n%s\n%s", c.workers, c.held, got, one)
		}
	}
}
