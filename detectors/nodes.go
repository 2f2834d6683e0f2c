package detectors

import (
	"context"
	"fmt"
	"time"

	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/sql/duck"
)

// SaveNodeHistory records how every GPU and link of the report's runs fared
// (the node_outcomes view: slow, throttled, GPU errors, hangs, late
// arrivals) in node_history, replacing the runs' earlier rows, so that
// node_reputation can score each node over the jobs that ran on it. A
// partial report records nothing: a rank whose data is still on its way
// must not read as hung or slow.
func SaveNodeHistory(ctx context.Context, st *duck.Store, r *report.Report, at time.Time) error {
	if r.Status != nil && r.Status.Partial {
		return nil
	}
	return st.Tx(ctx, func() error {
		for _, run := range r.Runs {
			if err := st.Exec(ctx, "DELETE FROM node_history WHERE run_id = ?", run.RunID); err != nil {
				return fmt.Errorf("node history: %w", err)
			}
			if err := st.Exec(ctx, `INSERT INTO node_history BY NAME
				SELECT *, ?::BIGINT AS analyzed_ns FROM node_outcomes WHERE run_id = ?`, at.UnixNano(), run.RunID); err != nil {
				return fmt.Errorf("node history: %w", err)
			}
		}
		return nil
	})
}
