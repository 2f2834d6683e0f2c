package duck_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/sql/duck"
)

// stageFile writes the rows slices_detail holds for run into the staged
// folder as rel (a staged file, as the ingestor writes them), then removes
// them from the store's own rows.
func stageFile(t *testing.T, st *duck.Store, run, rel string) {
	t.Helper()
	path := filepath.Join(st.StagedDir(), rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	mustExec(t, st, "COPY (SELECT * FROM slices_detail_rows WHERE run_id = ?) TO '"+path+"' (FORMAT parquet)", run)
	mustExec(t, st, "DELETE FROM slices_detail_rows WHERE run_id = ?", run)
}

func TestStagedStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "serve.duckdb")
	open := func(staged bool) (*duck.Store, error) {
		return duck.Open(ctx, path, duck.Options{Staged: staged})
	}
	st, err := open(true)
	if err != nil {
		t.Fatal(err)
	}
	if st.StagedDir() != strings.TrimSuffix(path, ".duckdb")+".staged" || !st.Staged("slices_detail") || st.Staged("steps") {
		t.Fatalf("staged folder %q, slices_detail staged %v, steps staged %v", st.StagedDir(), st.Staged("slices_detail"), st.Staged("steps"))
	}
	// an insert goes to the rows under the view
	insertSlices(t, st, "run-a", "node-a", 0)
	checkRows(t, st, []string{"run-a|6"}, "SELECT run_id, count(*) FROM slices GROUP BY ALL")

	// what a crash leaves: a file whose transaction committed but which
	// was not renamed yet (kept), one whose transaction never committed
	// (removed), and a file nobody recorded (removed)
	for _, run := range []string{"run-b", "run-c", "run-d"} {
		insertSlices(t, st, run, "node-b", 1)
	}
	stageFile(t, st, "run-b", "slices_detail/run=run-b/00001.parquet"+duck.StagedTmp)
	stageFile(t, st, "run-c", "slices_detail/run=run-c/00002.parquet"+duck.StagedTmp)
	stageFile(t, st, "run-d", "slices_detail/run=run-d/00003.parquet")
	mustExec(t, st, "INSERT INTO staged_files VALUES ('slices_detail/run=run-b/00001.parquet', 'slices_detail', 'run-b', 6, 1, 0)")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// opened again, even without asking: a staged store stays staged
	if st, err = open(false); err != nil {
		t.Fatal(err)
	}
	checkRows(t, st, []string{"run-a|6", "run-b|6"}, "SELECT run_id, count(*) FROM slices GROUP BY ALL ORDER BY 1")
	checkRows(t, st, []string{"run-a|6", "run-b|6"}, "SELECT run_id, count(*) FROM slices_detail GROUP BY ALL ORDER BY 1")
	left, _ := filepath.Glob(filepath.Join(st.StagedDir(), "slices_detail", "run=*", "*"))
	if len(left) != 1 || filepath.Base(left[0]) != "00001.parquet" {
		t.Errorf("staged files after the open: %v, want run-b's renamed into view", left)
	}
	// a run's rows alone: its own files, or the rows table
	for run, want := range map[string]int64{"run-a": 6, "run-b": 6, "run-x": 0} {
		q := st.RunRows("slices_detail", run)
		if n := queryInt(t, st, "SELECT count(*) FROM ("+q+")", run); n != want {
			t.Errorf("%s: %d rows from %s, want %d", run, n, q, want)
		}
	}
	if q := st.RunRows("steps", "run-a"); strings.Contains(q, "parquet") {
		t.Errorf("steps is not staged, but its query reads files: %s", q)
	}
	// the columns are the table's, whatever the files hold
	checkRows(t, st, []string{"VARCHAR|INTEGER|BIGINT"}, "SELECT typeof(name), typeof(rank), typeof(ts) FROM slices_detail LIMIT 1")

	// DeleteRun removes the run's file and its record too
	if had, err := st.DeleteRun(ctx, "run-b"); err != nil || !had {
		t.Fatalf("delete run-b: %v %v", had, err)
	}
	checkRows(t, st, []string{"run-a|6"}, "SELECT run_id, count(*) FROM slices GROUP BY ALL")
	if _, err := os.Stat(left[0]); !os.IsNotExist(err) {
		t.Errorf("run-b's file is still there: %v", err)
	}
	if n := queryInt(t, st, "SELECT count(*) FROM staged_files"); n != 0 {
		t.Errorf("%d staged_files rows left", n)
	}

	// a recorded file that is gone: the open says so, naming it
	mustExec(t, st, "INSERT INTO staged_files VALUES ('slices_detail/run=run-e/00009.parquet', 'slices_detail', 'run-e', 6, 1, 0)")
	st.Close()
	if _, err := open(true); err == nil || !strings.Contains(err.Error(), "slices_detail/run=run-e/00009.parquet") || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("open with a lost file: %v", err)
	}
}

// A store opened read-only reads the files through the views it keeps.
// A staged store opened read-only, from another working folder than the
// one it was written from under a relative path (serve --data-dir data,
// then trainscope sql --db /abs/data/trainscope.duckdb), reads its files.
func TestStagedStoreReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	st, err := duck.Open(ctx, filepath.Join("data", "serve.duckdb"), duck.Options{Staged: true})
	if err != nil {
		t.Fatal(err)
	}
	insertSlices(t, st, "run-a", "node-a", 0)
	stageFile(t, st, "run-a", "slices_detail/run=run-a/00001.parquet")
	mustExec(t, st, "INSERT INTO staged_files VALUES ('slices_detail/run=run-a/00001.parquet', 'slices_detail', 'run-a', 6, 1, 0)")
	st.Close()
	t.Chdir(t.TempDir())
	ro, err := duck.Open(ctx, filepath.Join(dir, "data", "serve.duckdb"), duck.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	checkRows(t, ro, []string{"run-a|6"}, "SELECT run_id, count(*) FROM slices GROUP BY ALL")

	// the data folder moved (copied to a laptop): its views named the
	// old one; read-only, they cannot be made again, so the files are read
	// through views of this session's own
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(filepath.Join(dir, "data"), moved); err != nil {
		t.Fatal(err)
	}
	ro2, err := duck.Open(ctx, filepath.Join(moved, "serve.duckdb"), duck.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro2.Close()
	checkRows(t, ro2, []string{"run-a|6"}, "SELECT run_id, count(*) FROM slices GROUP BY ALL")
	checkRows(t, ro2, []string{"run-a|6"}, "SELECT run_id, count(*) FROM slices_detail GROUP BY ALL")
}

// A store written before serve.staged was the default (its slices in
// DuckDB's tables) becomes staged when serve opens it again: its rows stay
// in view beside the files that come after.
func TestStagingAPlainStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "serve.duckdb")
	st, err := duck.Open(ctx, path, duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	insertSlices(t, st, "run-a", "node-a", 0)
	if st.StagedDir() != "" {
		t.Fatalf("a plain store has a staged folder %q", st.StagedDir())
	}
	st.Close()

	st = openStaged(t, path)
	defer st.Close()
	if !st.Staged("slices_core") {
		t.Fatal("the store was not staged")
	}
	insertSlices(t, st, "run-b", "node-b", 1)
	stageFile(t, st, "run-b", "slices_detail/run=run-b/00001.parquet")
	mustExec(t, st, "INSERT INTO staged_files VALUES ('slices_detail/run=run-b/00001.parquet', 'slices_detail', 'run-b', 6, 1, 0)")
	checkRows(t, st, []string{"run-a|6", "run-b|6"}, "SELECT run_id, count(*) FROM slices GROUP BY ALL ORDER BY 1")
	checkRows(t, st, []string{"run-a|6"}, "SELECT run_id, count(*) FROM slices_detail_rows GROUP BY ALL ORDER BY 1")
	for run, want := range map[string]int64{"run-a": 6, "run-b": 6} {
		if n := queryInt(t, st, "SELECT count(*) FROM ("+st.RunRows("slices_detail", run)+")", run); n != want {
			t.Errorf("%s: %d rows, want %d", run, n, want)
		}
	}
}

// A store staged before counters were staged holds them in a plain table:
// opened again, counters become staged too, and the rows it had stay in
// view beside new ones.
func TestStagingCountersOfAStagedStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.duckdb")
	st := openStaged(t, path)
	// as the version before left it: counters a plain table, with a row
	mustExec(t, st, "DROP VIEW counters")
	mustExec(t, st, "ALTER TABLE counters_rows RENAME TO counters")
	mustExec(t, st, "INSERT INTO counters (run_id, host, ts, metric, value) VALUES ('run-a', 'node-a', 1, 'gpu_util', 50)")
	st.Close()

	st = openStaged(t, path)
	defer st.Close()
	if !st.Staged("counters") {
		t.Fatal("counters were not staged")
	}
	if n := queryInt(t, st, "SELECT count(*) FROM duckdb_views() WHERE view_name = 'counters'"); n != 1 {
		t.Errorf("%d counters views, want 1", n)
	}
	mustExec(t, st, "INSERT INTO counters_rows (run_id, host, ts, metric, value) VALUES ('run-b', 'node-b', 2, 'gpu_util', 60)")
	checkRows(t, st, []string{"run-a|50", "run-b|60"}, "SELECT run_id, value::INTEGER FROM counters ORDER BY 1")
}

// openStaged opens (creating if needed) the staged file store at path; the
// caller closes it.
func openStaged(t *testing.T, path string) *duck.Store {
	t.Helper()
	st, err := duck.Open(context.Background(), path, duck.Options{Staged: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Sealed, an in-memory staged store's views read their files alone, with
// the same rows and columns; a table whose rows table holds rows, or whose
// files' columns differ from the schema's, keeps the view that unites them.
func TestSeal(t *testing.T) {
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{Staged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	insertSlices(t, st, "run-a", "node-a", 0)
	insertSlices(t, st, "run-b", "node-a", 1)
	stageFile(t, st, "run-a", "slices_detail/run=run-a/00001.parquet")
	stageFile(t, st, "run-b", "slices_detail/run=run-b/00002.parquet")
	// counters: a file whose rank is SMALLINT, not the schema's INTEGER
	mustExec(t, st, "INSERT INTO counters_rows (run_id, host, rank, ts, metric, value) VALUES ('run-a', 'node-a', 0, 1, 'gpu_util', 50)")
	counters := filepath.Join(st.StagedDir(), "counters", "run=run-a", "00001.parquet")
	if err := os.MkdirAll(filepath.Dir(counters), 0o755); err != nil {
		t.Fatal(err)
	}
	mustExec(t, st, "COPY (SELECT * REPLACE (rank::SMALLINT AS rank) FROM counters_rows) TO '"+counters+"' (FORMAT parquet)")
	mustExec(t, st, "DELETE FROM counters_rows")
	// slices_core keeps a row of its own
	mustExec(t, st, "INSERT INTO slices_core_rows (run_id, rank, host, kind, cat, name, ts, dur, pid, tid) VALUES ('run-c', 0, 'node-a', 'cpu_op', 'cpu_op', 'x', 1, 1, 1, 1)")

	q := "SELECT run_id, count(*), sum(ts)::BIGINT, min(name) FROM slices_detail GROUP BY ALL ORDER BY 1"
	want := rowStrings(t, st, q)
	cols := rowStrings(t, st, "SELECT column_name || ' ' || column_type FROM (DESCRIBE slices_detail)")
	if err := st.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	views := map[string]bool{}
	for _, v := range rowStrings(t, st, "SELECT view_name || '|' || contains(sql, 'union_by_name') FROM duckdb_views() WHERE view_name IN ('slices_detail', 'slices_core', 'counters')") {
		name, unites, _ := strings.Cut(v, "|")
		views[name] = unites == "true"
	}
	if views["slices_detail"] || !views["slices_core"] || !views["counters"] {
		t.Errorf("views uniting their files after Seal: %v; want slices_core and counters only", views)
	}
	checkRows(t, st, want, q)
	checkRows(t, st, cols, "SELECT column_name || ' ' || column_type FROM (DESCRIBE slices_detail)")
	checkRows(t, st, []string{"run-c|1"}, "SELECT run_id, count(*) FROM slices_core GROUP BY ALL")
	checkRows(t, st, []string{"INTEGER|50"}, "SELECT typeof(rank), value::INTEGER FROM counters")

	// rows inserted now would not be read: refused
	rec := buildSlices().Record("run-d", "node-a", 0)
	defer rec.Release()
	if err := st.Insert(ctx, "slices_detail", rec); err == nil || !strings.Contains(err.Error(), "sealed") {
		t.Errorf("insert into a sealed store: %v, want an error saying it is sealed", err)
	}

	// a file store (serve's) keeps files of earlier versions: never sealed
	fst := openStaged(t, filepath.Join(t.TempDir(), "serve.duckdb"))
	defer fst.Close()
	if err := fst.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	checkRows(t, fst, []string{"true"}, "SELECT contains(sql, 'union_by_name') FROM duckdb_views() WHERE view_name = 'slices_detail'")
}
