package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// stagedRecord is n rows: name "<prefix><i%3>", ts base+i, and an extra
// column when asked; each record has a dictionary of its own.
func stagedRecord(t *testing.T, prefix string, base int64, n int, extra bool) arrow.RecordBatch {
	t.Helper()
	fields := []arrow.Field{{Name: "name", Type: stream.DictString}, {Name: "ts", Type: arrow.PrimitiveTypes.Int64}}
	if extra {
		fields = append(fields, arrow.Field{Name: "extra", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i := range n {
		if err := b.Field(0).(*array.BinaryDictionaryBuilder).AppendString(prefix + string(rune('0'+i%3))); err != nil {
			t.Fatal(err)
		}
		b.Field(1).(*array.Int64Builder).Append(base + int64(i))
		if extra {
			b.Field(2).(*array.Int32Builder).Append(int32(i))
		}
	}
	return b.NewRecordBatch()
}

// writeStagedFile writes recs as the ingestor stages a file, at path.
func writeStagedFile(t *testing.T, path string, recs ...arrow.RecordBatch) {
	t.Helper()
	f := &stagedFile{rel: filepath.Base(path)}
	for _, r := range recs {
		f.items = append(f.items, &item{rec: r})
	}
	if err := f.write(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
}

// plainPages counts the data pages of column col in the Parquet file at
// path that hold their strings plain: arrow-go's fallback when a batch
// brings a dictionary other than the column chunk's first.
func plainPages(t *testing.T, path string, col int) int {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for g := range r.NumRowGroups() {
		cc, err := r.MetaData().RowGroup(g).ColumnChunk(col)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range cc.EncodingStats() {
			if fmt.Sprint(st.PageType) == "DATA_PAGE" && st.Encoding == parquet.Encodings.Plain {
				n++
			}
		}
	}
	return n
}

// A staged file of several messages' batches, each with its dictionary,
// keeps its strings dictionary encoded.
func TestStagedFileKeepsDictionaries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.parquet")
	writeStagedFile(t, path, stagedRecord(t, "a", 0, 1000, false), stagedRecord(t, "b", 1000, 1000, false))
	if n := plainPages(t, path, 0); n != 0 {
		t.Errorf("%d data pages of plain names, want none", n)
	}
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	names := make([]parquet.ByteArray, 2000)
	cr, _ := r.RowGroup(0).Column(0)
	if _, n, err := cr.(*file.ByteArrayColumnChunkReader).ReadBatch(2000, names, nil, nil); err != nil || n != 2000 {
		t.Fatalf("read %d names: %v", n, err)
	}
	if string(names[0]) != "a0" || string(names[1000]) != "b0" || string(names[1999]) != "b0" {
		t.Errorf("names %q %q %q, want a0 b0 b0", names[0], names[1000], names[1999])
	}
}

func TestMergeParquet(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet"), filepath.Join(dir, "c.parquet")
	writeStagedFile(t, a, stagedRecord(t, "k", 0, 100_000, false))
	writeStagedFile(t, b, stagedRecord(t, "j", 100_000, 50_000, false))
	writeStagedFile(t, c, stagedRecord(t, "k", 0, 10, true))

	dst := filepath.Join(dir, "m.parquet")
	if err := mergeParquet(context.Background(), dst, []string{a, c}); !errors.Is(err, errSchemasDiffer) {
		t.Fatalf("merging files of two schemas: %v, want errSchemasDiffer", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("a refused merge left %s: %v", dst, err)
	}

	if err := mergeParquet(context.Background(), dst, []string{a, b}); err != nil {
		t.Fatal(err)
	}
	r, err := file.OpenParquetFile(dst, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// the second row group holds rows of both files, and so two of their
	// dictionaries: written as one
	if n := plainPages(t, dst, 0); n != 0 {
		t.Errorf("%d data pages of plain names, want none", n)
	}
	if got := r.NumRows(); got != 150_000 {
		t.Errorf("merged %d rows, want 150000", got)
	}
	// row groups of DuckDB's size, so that a scan runs on every thread
	if got := r.NumRowGroups(); got != 2 {
		t.Errorf("%d row groups, want 2 of at most %d rows", got, mergeRowGroup)
	}
	// every row, in order, names and times intact
	var next int64
	for g := range r.NumRowGroups() {
		rg := r.RowGroup(g)
		names, _ := rg.Column(0)
		times, _ := rg.Column(1)
		n := rg.NumRows()
		vals := make([]int64, n)
		if _, read, err := times.(*file.Int64ColumnChunkReader).ReadBatch(n, vals, nil, nil); err != nil || int64(read) != n {
			t.Fatalf("row group %d: read %d of %d times: %v", g, read, n, err)
		}
		strs := make([]parquet.ByteArray, n)
		if _, read, err := names.(*file.ByteArrayColumnChunkReader).ReadBatch(n, strs, nil, nil); err != nil || int64(read) != n {
			t.Fatalf("row group %d: read %d of %d names: %v", g, read, n, err)
		}
		for i := range n {
			want, prefix := next%100_000, "k"
			if next >= 100_000 {
				prefix = "j" // file b's
			}
			if vals[i] != next || string(strs[i]) != prefix+string(rune('0'+want%3)) {
				t.Fatalf("row %d: ts %d name %q, want ts %d name %s%d", next, vals[i], strs[i], next, prefix, want%3)
			}
			next++
		}
	}
}

// stagedRun opens a staged store and makes the folder of run x's
// slices_core files.
func stagedRun(t *testing.T) (*duck.Store, string) {
	t.Helper()
	st, err := duck.Open(context.Background(), filepath.Join(t.TempDir(), "serve.duckdb"), duck.Options{Staged: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	run := filepath.Join(st.StagedDir(), "slices_core", "run=x")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	return st, run
}

// Files of two schemas (publishers of two versions) are merged by DuckDB,
// which unites their columns by name.
func TestPrepareMergeOfTwoSchemas(t *testing.T) {
	ctx := context.Background()
	st, run := stagedRun(t)
	writeStagedFile(t, filepath.Join(run, "1.parquet"), stagedRecord(t, "k", 0, 1000, false))
	writeStagedFile(t, filepath.Join(run, "2.parquet"), stagedRecord(t, "k", 1000, 10, true))
	for _, p := range []string{"1", "2"} {
		if err := st.Exec(ctx, "INSERT INTO staged_files VALUES (?, 'slices_core', 'x', 1, 1, 0)", "slices_core/run=x/"+p+".parquet"); err != nil {
			t.Fatal(err)
		}
	}
	m, err := prepareMerge(ctx, st, stagedKey{"slices_core", "x"})
	if err != nil || m == nil {
		t.Fatalf("merge: %v, %v", m, err)
	}
	var n, extra int64
	if err := st.Conn().QueryRowContext(ctx, "SELECT count(*), count(extra) FROM read_parquet("+duck.Literal(m.tmp(st))+")").Scan(&n, &extra); err != nil {
		t.Fatal(err)
	}
	if n != 1010 || extra != 10 {
		t.Errorf("merged %d rows, %d with extra; want 1010 and 10", n, extra)
	}
}

// A merge that open queries put off maxMergeDeferrals times waits for
// them instead: queries that always overlap cannot hold a run's files
// apart for ever.
func TestMergeWaitsOncePutOffTooOften(t *testing.T) {
	defer func(f, d int) { compactFiles, maxMergeDeferrals = f, d }(compactFiles, maxMergeDeferrals)
	compactFiles, maxMergeDeferrals = 2, 3
	ctx := context.Background()
	st, run := stagedRun(t)
	for i, p := range []string{"1", "2"} {
		writeStagedFile(t, filepath.Join(run, p+".parquet"), stagedRecord(t, "k", int64(i*100), 100, false))
		if err := st.Exec(ctx, "INSERT INTO staged_files VALUES (?, 'slices_core', 'x', 100, 1, 0)", "slices_core/run=x/"+p+".parquet"); err != nil {
			t.Fatal(err)
		}
	}
	var logs []string
	c := &Consumer{St: st, Mu: new(sync.Mutex), Stats: new(IngestStats),
		small: map[stagedKey]int{{"slices_core", "x"}: 2},
		Logf:  func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
	defer c.dropMerges()

	first, err := st.NewReader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range maxMergeDeferrals { // a query is open at every commit
		c.compactStaged(ctx)
	}
	if got := c.Stats.CompactionsDeferred.Load(); got != int64(maxMergeDeferrals) || c.Stats.Compactions.Load() != 0 {
		t.Fatalf("with a query open: %d deferred, %d merged; want %d and 0", got, c.Stats.Compactions.Load(), maxMergeDeferrals)
	}
	done := make(chan struct{})
	go func() { // the next commit waits for the open query
		defer close(done)
		c.compactStaged(ctx)
	}()
	for !st.ReadersHeldBack() {
		select {
		case <-done:
			t.Fatalf("the merge, put off %d times, did not wait for the open query: %d merged", maxMergeDeferrals, c.Stats.Compactions.Load())
		default:
			runtime.Gosched()
		}
	}
	// a query that comes now waits for the merge (it would list the files
	// the merge removes), and sees each row once
	second := make(chan error, 1)
	go func() {
		r, err := st.NewReader(ctx)
		if err != nil {
			second <- err
			return
		}
		defer r.Close()
		q, err := r.QueryArrow(ctx, "SELECT count(*) FROM slices_core")
		if err != nil {
			second <- err
			return
		}
		defer q.Release()
		q.Next()
		if n := q.RecordBatch().Column(0).(*array.Int64).Value(0); n != 200 {
			err = fmt.Errorf("a query held back by the merge saw %d rows, want 200", n)
		}
		second <- err
	}()
	first.Close()
	<-done
	if err := <-second; err != nil {
		t.Error(err)
	}
	if c.Stats.Compactions.Load() != 1 || c.Stats.CompactionsWaited.Load() != 1 {
		t.Errorf("%d merged, %d waited; want 1 and 1 (logs %q)", c.Stats.Compactions.Load(), c.Stats.CompactionsWaited.Load(), logs)
	}
	if on, _ := filepath.Glob(filepath.Join(run, "*.parquet")); len(on) != 1 {
		t.Errorf("files after the merge: %v, want one", on)
	}
}
