package ingest

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/trainscope/trainscope/sql/duck"
)

// StoreSink inserts batches into a DuckDB store. It is what both paths end
// in: Load calls it directly, the JetStream consumer after decoding.
type StoreSink struct{ St *duck.Store }

// Insert appends rec to table. A ranks row from a trace replaces one that
// only a memory snapshot gave; a second row for a rank that already has one
// is ignored, so that a batch seen twice changes nothing.
func (s StoreSink) Insert(ctx context.Context, table string, rec arrow.RecordBatch) error {
	if table != "ranks" {
		return s.St.Insert(ctx, table, rec)
	}
	steps := []func() error{
		func() error {
			return s.St.Exec(ctx, "CREATE TEMP TABLE IF NOT EXISTS ranks_incoming AS SELECT * FROM ranks LIMIT 0")
		},
		func() error { return s.St.Exec(ctx, "DELETE FROM ranks_incoming") },
		func() error { return s.St.Insert(ctx, "ranks_incoming", rec) },
		func() error {
			return s.St.Exec(ctx, `DELETE FROM ranks USING ranks_incoming i
				WHERE ranks.run_id = i.run_id AND ranks.rank = i.rank
				  AND ranks.rank_source = 'snapshot' AND i.rank_source IS DISTINCT FROM 'snapshot'`)
		},
		func() error { return s.St.Exec(ctx, "INSERT OR IGNORE INTO ranks SELECT * FROM ranks_incoming") },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("insert into ranks: %w", err)
		}
	}
	return nil
}

// RefreshRuns rebuilds the runs rows of the given runs from their ranks:
// the world size, the most common GPU, the time span and the sources.
func RefreshRuns(ctx context.Context, st *duck.Store, runIDs ...string) error {
	for _, id := range runIDs {
		err := st.Exec(ctx, "DELETE FROM runs WHERE run_id = ?", id)
		if err == nil {
			err = st.Exec(ctx, `INSERT INTO runs
				SELECT run_id, 'pytorch', NULL, max(world_size),
				       (SELECT gpu_name FROM ranks g WHERE g.run_id = r.run_id AND gpu_name IS NOT NULL
				        GROUP BY gpu_name ORDER BY count(*) DESC, gpu_name LIMIT 1),
				       min(start_ns) FILTER (WHERE start_ns > 0), max(end_ns),
				       list(source ORDER BY rank, source)
				FROM ranks r WHERE run_id = ? GROUP BY run_id`, id)
		}
		if err != nil {
			return fmt.Errorf("record run %s: %w", id, err)
		}
	}
	return nil
}
