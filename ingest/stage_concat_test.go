package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/trainscope/trainscope/sql/duck"
)

// fileRows reads every row of the Parquet file at path, in order, as
// "name|ts|extra" with arrow-go's reader.
func fileRows(t *testing.T, path string) []string {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{BatchSize: 4096}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var out []string
	for rr.Next() {
		rec := rr.RecordBatch()
		for i := range int(rec.NumRows()) {
			row := ""
			for c := range int(rec.NumCols()) {
				row += rec.Column(c).ValueStr(i) + "|"
			}
			out = append(out, row)
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return out
}

// rowGroupStats is each row group's rows, and min and max of its column
// col, as the footer of the file at path has them.
func rowGroupStats(t *testing.T, path string, col int) []string {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	for g := range r.NumRowGroups() {
		rg := r.MetaData().RowGroup(g)
		cc, err := rg.ColumnChunk(col)
		if err != nil {
			t.Fatal(err)
		}
		st, err := cc.Statistics()
		if err != nil || st == nil || !st.HasMinMax() {
			t.Fatalf("row group %d: no min and max of column %d: %v", g, col, err)
		}
		s := st.(*metadata.Int64Statistics)
		out = append(out, fmt.Sprintf("%d rows, %d-%d", rg.NumRows(), s.Min(), s.Max()))
	}
	return out
}

func TestConcatParquet(t *testing.T) {
	dir := t.TempDir()
	path := func(n string) string { return filepath.Join(dir, n+".parquet") }
	writeStagedFile(t, path("a"), stagedRecord(t, "k", 0, 30_000, false))
	writeStagedFile(t, path("b"), stagedRecord(t, "j", 30_000, 20_000, false), stagedRecord(t, "i", 50_000, 5, false))
	writeStagedFile(t, path("c"), stagedRecord(t, "h", -7, 17_000, false))
	writeStagedFile(t, path("x"), stagedRecord(t, "k", 0, 10, true))

	if err := concatParquet(path("ab"), []string{path("a"), path("b")}); err != nil {
		t.Fatal(err)
	}
	// a joined file joined again: its row groups are moved twice
	if err := concatParquet(path("abc"), []string{path("c"), path("ab")}); err != nil {
		t.Fatal(err)
	}
	var want, wantStats []string
	for _, n := range []string{"c", "a", "b"} {
		want = append(want, fileRows(t, path(n))...)
		wantStats = append(wantStats, rowGroupStats(t, path(n), 1)...)
	}
	got := fileRows(t, path("abc"))
	if len(got) != len(want) {
		t.Fatalf("joined file: %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("row %d: %q, want %q", i, got[i], want[i])
		}
	}
	// each file's row groups, unchanged, with the min and max that let
	// DuckDB skip them
	if gs := rowGroupStats(t, path("abc"), 1); fmt.Sprint(gs) != fmt.Sprint(wantStats) {
		t.Errorf("row groups %v, want %v", gs, wantStats)
	}
	if n := plainPages(t, path("abc"), 0); n != 0 {
		t.Errorf("%d data pages of plain names, want none", n)
	}

	// DuckDB, which reads them, sees the same rows
	st, err := duck.Open(context.Background(), "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var diff, n, skipped int64
	q := fmt.Sprintf(`SELECT (SELECT count(*) FROM (SELECT * FROM read_parquet(%[1]s) EXCEPT ALL SELECT * FROM read_parquet([%[2]s, %[3]s, %[4]s]))),
		(SELECT count(*) FROM read_parquet(%[1]s)), (SELECT count(*) FROM read_parquet(%[1]s) WHERE ts >= 50000)`,
		duck.Literal(path("abc")), duck.Literal(path("a")), duck.Literal(path("b")), duck.Literal(path("c")))
	if err := st.Conn().QueryRowContext(context.Background(), q).Scan(&diff, &n, &skipped); err != nil {
		t.Fatal(err)
	}
	if diff != 0 || n != int64(len(want)) || skipped != 5 {
		t.Errorf("DuckDB: %d rows not in the sources, %d rows, %d from ts 50000; want 0, %d, 5", diff, n, skipped, len(want))
	}

	for _, tc := range []struct {
		name string
		srcs []string
	}{
		{"two schemas", []string{path("a"), path("x")}},
		{"not Parquet", []string{path("a"), filepath.Join(dir, "junk")}},
	} {
		if tc.name == "not Parquet" {
			if err := os.WriteFile(tc.srcs[1], []byte("PAR1 nothing here"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		err := concatParquet(path("bad"), tc.srcs)
		if err == nil {
			t.Errorf("%s: joined", tc.name)
		}
		if tc.name == "two schemas" && !errors.Is(err, errNotConcatenable) {
			t.Errorf("%s: %v, want errNotConcatenable (mergeParquet then tries)", tc.name, err)
		}
		if _, err := os.Stat(path("bad")); !os.IsNotExist(err) {
			t.Errorf("%s: a refused join left its file: %v", tc.name, err)
		}
	}
}

// Files with page indexes are not joined: their offsets would be wrong.
func TestConcatParquetRefusesPageIndexes(t *testing.T) {
	dir := t.TempDir()
	plain, indexed := filepath.Join(dir, "p.parquet"), filepath.Join(dir, "i.parquet")
	writeStagedFile(t, plain, stagedRecord(t, "k", 0, 100, false))
	rec := stagedRecord(t, "k", 100, 100, false)
	defer rec.Release()
	out, err := os.Create(indexed)
	if err != nil {
		t.Fatal(err)
	}
	props := parquet.NewWriterProperties(append(stagedOptions(rec.Schema()), parquet.WithPageIndexEnabled(true))...)
	w, err := pqarrow.NewFileWriter(rec.Schema(), out, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := concatParquet(filepath.Join(dir, "j.parquet"), []string{plain, indexed}); !errors.Is(err, errNotConcatenable) {
		t.Errorf("joining a file with page indexes: %v, want errNotConcatenable", err)
	}
}

// A merge of files of many rows joins their row groups; of few rows,
// writes them again as row groups of DuckDB's size.
func TestPrepareMergeJoinsBigFiles(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		rows, wantGroups int
	}{
		{concatMinRows, 3},
		{concatMinRows - 1, 1},
	} {
		st, run := stagedRun(t)
		for i, p := range []string{"1", "2", "3"} {
			writeStagedFile(t, filepath.Join(run, p+".parquet"), stagedRecord(t, "k", int64(i*tc.rows), tc.rows, false))
			if err := st.Exec(ctx, "INSERT INTO staged_files VALUES (?, 'slices_core', 'x', ?, 1, 0)", "slices_core/run=x/"+p+".parquet", tc.rows); err != nil {
				t.Fatal(err)
			}
		}
		m, err := prepareMerge(ctx, st, stagedKey{"slices_core", "x"})
		if err != nil || m == nil {
			t.Fatalf("%d rows a file: merge %v, %v", tc.rows, m, err)
		}
		r, err := file.OpenParquetFile(m.tmp(st), false)
		if err != nil {
			t.Fatal(err)
		}
		if r.NumRowGroups() != tc.wantGroups || r.NumRows() != int64(3*tc.rows) {
			t.Errorf("%d rows a file: merged into %d row groups, %d rows; want %d, %d", tc.rows, r.NumRowGroups(), r.NumRows(), tc.wantGroups, 3*tc.rows)
		}
		r.Close()
		if fi, err := os.Stat(m.tmp(st)); err != nil || m.file.bytes != fi.Size() {
			t.Errorf("%d rows a file: recorded %d bytes, file %v %v", tc.rows, m.file.bytes, fi, err)
		}
		os.Remove(m.tmp(st))
	}
}
