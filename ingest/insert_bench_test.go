package ingest_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// BenchmarkStoreInsert is DuckDB's Arrow insert of one trace's slices, per
// table: the floor under both analyze and the streaming ingestor. Report
// rows/s from ns/op and the row count logged.
//
//	go test -tags duckdb_arrow -run '^$' -bench StoreInsert ./ingest/
func BenchmarkStoreInsert(b *testing.B) {
	ctx := context.Background()
	files, _ := filepath.Glob("../bench/sample/*.json.gz")
	var c ingest.Collect
	if _, err := ingest.Read(ctx, &c, files[:1], ingest.Options{RunID: "x", Rank: -1}); err != nil {
		b.Fatal(err)
	}
	defer ingest.Release(c.Batches)
	for _, bt := range c.Batches {
		if bt.Table != "slices_core" && bt.Table != "slices_detail" {
			continue
		}
		b.Run(bt.Table, func(b *testing.B) {
			st, err := duck.Open(ctx, "", duck.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			for b.Loop() {
				if err := st.Insert(ctx, bt.Table, bt.Rec); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(bt.Rec.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(bt.Rec.NumCols()), "cols")
		})
	}
}
