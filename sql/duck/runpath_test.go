package duck_test

import (
	"path/filepath"
	"testing"
)

// A staged run's rows are in the folder of its path token (x/y:
// run=x%2Fy, apart from x_y's) and, for files staged before, in the
// folder of its subject token (run=x_y, which x_y shares): RunRows reads
// both, and each run's rows alone.
func TestRunRowsPathToken(t *testing.T) {
	st := openStaged(t, filepath.Join(t.TempDir(), "serve.duckdb"))
	defer st.Close()
	insertSlices(t, st, "x/y", "node-a", 0)
	stageFile(t, st, "x/y", "slices_detail/run=x_y/00001.parquet")
	insertSlices(t, st, "x/y", "node-a", 0)
	stageFile(t, st, "x/y", "slices_detail/run=x%2Fy/00002.parquet")
	insertSlices(t, st, "x_y", "node-b", 1)
	stageFile(t, st, "x_y", "slices_detail/run=x_y/00003.parquet")
	insertSlices(t, st, "x_y", "node-b", 1) // in the rows table
	for run, want := range map[string]int64{"x/y": 12, "x_y": 12, "x.y": 0} {
		q := st.RunRows("slices_detail", run)
		if n := queryInt(t, st, "SELECT count(*) FROM ("+q+")", run); n != want {
			t.Errorf("%s: %d rows from %s, want %d", run, n, q, want)
		}
	}
}
