package ingest_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// TestLoadReplacesRun loads the sample run twice into one database file:
// the second load replaces the first instead of doubling every row, and
// another run in the file is left alone.
func TestLoadReplacesRun(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "run.duckdb")
	files, err := ingest.Discover([]string{"../bench/sample"})
	if err != nil {
		t.Fatal(err)
	}
	counts := func(st *duck.Store, run string) map[string]int64 {
		out := map[string]int64{}
		for _, tbl := range duck.RunTables {
			var n int64
			if err := st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM "+tbl+" WHERE run_id = ?", run).Scan(&n); err != nil {
				t.Fatal(err)
			}
			out[tbl] = n
		}
		return out
	}
	var first map[string]int64
	for i, run := range []string{"a", "b", "a"} {
		st, err := duck.Open(ctx, db, duck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var progress bytes.Buffer
		if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: run, Rank: -1, Progress: &progress}); err != nil {
			t.Fatal(err)
		}
		got := counts(st, run)
		if i == 0 {
			first = got
			if got["slices_core"] == 0 || got["stacks"] == 0 {
				t.Fatalf("first load: %v", got)
			}
		}
		for tbl, n := range first {
			if got[tbl] != n {
				t.Errorf("load %d of run %s: %s has %d rows, want %d", i+1, run, tbl, got[tbl], n)
			}
		}
		if replaced := strings.Contains(progress.String(), "replacing run a"); replaced != (i == 2) {
			t.Errorf("load %d: progress %q", i+1, progress.String())
		}
		if i == 2 {
			if b := counts(st, "b"); b["slices_core"] != first["slices_core"] {
				t.Errorf("run b lost rows: %v", b)
			}
		}
		st.Close()
	}
}
