package ingest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trainscope/trainscope/sql/duck"
)

// BenchmarkStagedWrite is the staged ingestor's write of one trace's
// slices as Parquet files (synced, as a commit writes them): compare its
// rows/s with BenchmarkStoreInsert's, the same batches into DuckDB.
//
//	go test -tags duckdb_arrow -run '^$' -bench 'StagedWrite|StoreInsert' ./ingest/
func BenchmarkStagedWrite(b *testing.B) {
	ctx := context.Background()
	files, _ := filepath.Glob("../bench/sample/*.json.gz")
	var c Collect
	if _, err := Read(ctx, &c, files[:1], Options{RunID: "x", Rank: -1}); err != nil {
		b.Fatal(err)
	}
	defer Release(c.Batches)
	st, err := duck.Open(ctx, filepath.Join(b.TempDir(), "s.duckdb"), duck.Options{Staged: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var items []*item
	var rows int64
	for i, bt := range c.Batches {
		if st.Staged(bt.Table) {
			items = append(items, &item{table: bt.Table, run: "x", rec: bt.Rec, seq: uint64(i + 1)})
			rows += bt.Rec.NumRows()
		}
	}
	for b.Loop() {
		staged := stageFiles(st, items)
		if err := writeStaged(ctx, st.StagedDir(), staged, 0); err != nil {
			b.Fatal(err)
		}
		for _, f := range staged {
			os.Remove(filepath.Join(st.StagedDir(), f.rel+duck.StagedTmp))
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
