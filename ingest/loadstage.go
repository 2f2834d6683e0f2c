package ingest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/trainscope/trainscope/stream/transport"
)

// A load into a staged store (analyze's, duck.Options.Staged) writes the
// batches of its staged tables as Parquet files, as the ingestor does,
// instead of appending them to DuckDB: arrow-go writes syn8's slices and
// counters in ~0.4 s of one core where DuckDB's appends took ~2 s, and the
// rows then sit in files, not in DuckDB's memory (bench/RESULTS.md,
// "analyze stages its rows as Parquet").

// loadFileSeq numbers the files loads stage, so that no two are named
// alike (a consumer's are named by stream sequence, these by id).
var loadFileSeq atomic.Int64

// stageLoaded writes the batches of recs (table -> batches, all of staged
// tables) as Parquet files, records them in staged_files and puts them in
// view. The caller releases recs.
func stageLoaded(ctx context.Context, s *bufferedSink, tables []string) error {
	var items []*item
	for _, t := range tables {
		for _, rec := range s.pending[t] {
			if rec.NumRows() == 0 {
				continue
			}
			id := fmt.Sprintf("load-%d-%d", time.Now().UnixNano(), loadFileSeq.Add(1))
			items = append(items, &item{id: id, table: t, run: transport.BatchRun(rec), rec: rec})
		}
	}
	files := stageFiles(s.st, items)
	if len(files) == 0 {
		return nil
	}
	dir := s.st.StagedDir()
	if err := writeStaged(ctx, dir, files, s.writers); err != nil {
		settleStaged(dir, files, false)
		return err
	}
	if err := recordStaged(ctx, s.st, files); err != nil {
		settleStaged(dir, files, false)
		return err
	}
	return settleStaged(dir, files, true)
}
