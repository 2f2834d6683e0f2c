package duck_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trainscope/trainscope/sql/duck"
)

// uncompressedSegments counts the column segments of table stored without
// compression.
func uncompressedSegments(t *testing.T, st *duck.Store, table string) int {
	t.Helper()
	var n int
	err := st.Conn().QueryRowContext(context.Background(),
		"SELECT count(*) FROM pragma_storage_info('"+table+"') WHERE compression = 'Uncompressed'").Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// openCompressed opens a compressed in-memory store, closed when t ends.
func openCompressed(t *testing.T) *duck.Store {
	t.Helper()
	st, err := duck.Open(context.Background(), "", duck.Options{Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A compressed in-memory store holds rows uncompressed until Checkpoint,
// and every connection, forks included, uses its database: the schema,
// the rows and the views. A file is never "compressed" in this sense.
func TestCompressedStore(t *testing.T) {
	ctx := context.Background()
	st := openCompressed(t)
	if !st.Compressed() {
		t.Fatal("in-memory store opened with Compress: Compressed() false")
	}
	if err := st.Exec(ctx, "INSERT INTO steps SELECT 'r', 0, i::INTEGER, i, i + 1 FROM range(200000) t(i)"); err != nil {
		t.Fatal(err)
	}
	if n := uncompressedSegments(t, st, "steps"); n == 0 {
		t.Fatal("rows compressed before any checkpoint: the test cannot tell")
	}
	if err := st.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if n := uncompressedSegments(t, st, "steps"); n != 0 {
		t.Errorf("%d uncompressed segments after Checkpoint", n)
	}
	fork, err := st.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer fork.Close()
	var rows, fromView int
	if err := fork.Conn().QueryRowContext(ctx, "SELECT count(*) FROM steps").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if err := fork.Conn().QueryRowContext(ctx, "SELECT count(*) FROM slices").Scan(&fromView); err != nil {
		t.Fatalf("the slices view from a fork: %v", err)
	}
	if rows != 200000 || fromView != 0 {
		t.Errorf("fork sees %d steps and %d slices, want 200000 and 0", rows, fromView)
	}
	var db string
	if err := fork.Conn().QueryRowContext(ctx, "SELECT current_database()").Scan(&db); err != nil || db != "trainscope" {
		t.Errorf("fork's database %q (%v), want trainscope", db, err)
	}

	file, err := duck.Open(ctx, filepath.Join(t.TempDir(), "f.duckdb"), duck.Options{Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if file.Compressed() {
		t.Error("a file store says Compressed()")
	}
}

// A compressed store's checkpoints leave the row groups that each flush
// made as they are: merging them, as DuckDB does by default, rewrote rows
// compressed before at every other checkpoint (a third of syn8's insert
// time). Every row is still there, in the order it came.
func TestCheckpointKeepsRowGroups(t *testing.T) {
	ctx := context.Background()
	st := openCompressed(t)
	const flushes, rows = 4, 30000 // all four would fit in one row group
	for f := range flushes {
		if err := st.Exec(ctx, "INSERT INTO steps SELECT 'r', 0, i::INTEGER, i, i + 1 FROM range(?, ?) t(i)", f*rows, (f+1)*rows); err != nil {
			t.Fatal(err)
		}
		if err := st.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var groups, n, ordered int
	if err := st.Conn().QueryRowContext(ctx, "SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('steps')").Scan(&groups); err != nil {
		t.Fatal(err)
	}
	if groups != flushes {
		t.Errorf("%d row groups after %d checkpoints of %d rows each, want %d: the checkpoints merged them", groups, flushes, rows, flushes)
	}
	if err := st.Conn().QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE step = rowid) FROM steps`).Scan(&n, &ordered); err != nil {
		t.Fatal(err)
	}
	if n != flushes*rows || ordered != n {
		t.Errorf("%d rows, %d in insertion order; want %d in order", n, ordered, flushes*rows)
	}
}

// A compressed store's checkpoint hands what it freed (the rows it just
// compressed) back to the system at once, instead of DuckDB's allocator
// keeping it for a second: analyze checkpoints after each trace, and the
// pages kept were a sixth of its peak on syn8.
func TestCheckpointHandsFreedPagesBack(t *testing.T) {
	ctx := context.Background()
	if _, ok := duck.AllocatorRetained(); !ok {
		t.Skip("DuckDB is not built with its jemalloc here")
	}
	st := openCompressed(t)
	// about 40 MB of rows before compression
	if err := st.Exec(ctx, "INSERT INTO steps SELECT 'r', 0, i::INTEGER, i * 7919, i * 7919 + 1 FROM range(1500000) t(i)"); err != nil {
		t.Fatal(err)
	}
	// DuckDB frees some of what the first checkpoint replaced only once
	// the next statement runs: checkpoint again after one
	for _, q := range []string{"CHECKPOINT", "SELECT count(*) FROM steps", "CHECKPOINT"} {
		var err error
		if q == "CHECKPOINT" {
			err = st.Checkpoint(ctx)
		} else {
			err = st.Exec(ctx, q)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	retained, _ := duck.AllocatorRetained()
	t.Logf("%.1f MB freed and kept after the checkpoints", float64(retained)/(1<<20))
	if retained > 4<<20 {
		t.Errorf("DuckDB's allocator keeps %.1f MB freed after the checkpoint, want under 4 MB", float64(retained)/(1<<20))
	}
}
