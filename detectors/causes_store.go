package detectors

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/sql/duck"
)

// SaveCauses writes the report's root causes into the root_causes table
// (replacing the runs' earlier rows), so that SQL clients and Grafana can
// read what the report leads with.
func SaveCauses(ctx context.Context, st *duck.Store, r *report.Report) error {
	js := func(v any) any {
		if v == nil {
			return nil
		}
		b, _ := json.Marshal(v)
		if string(b) == "null" || string(b) == "[]" {
			return nil
		}
		return string(b)
	}
	return st.Tx(ctx, func() error {
		for _, run := range r.Runs {
			if err := st.Exec(ctx, "DELETE FROM root_causes WHERE run_id = ?", run.RunID); err != nil {
				return fmt.Errorf("root causes: %w", err)
			}
		}
		pos := map[string]int{}
		for _, c := range r.Causes {
			pos[c.RunID]++
			var ranks any
			if len(c.Ranks) > 0 {
				ranks = js(c.Ranks)
			}
			var stall any
			if c.StallNS > 0 {
				stall = c.StallNS
			}
			if err := st.Exec(ctx, `INSERT INTO root_causes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				c.RunID, pos[c.RunID], c.ID, c.Kind, nullIfEmpty(c.Why), c.Rank, ranks, nullIfEmpty(c.Host), c.Step,
				c.CostNS, c.CostPct, stall, c.Headline, nullIfEmpty(c.Fix), js(c.Evidence), js(c.Shown), js(c.Explains)); err != nil {
				return fmt.Errorf("root causes: %w", err)
			}
		}
		return nil
	})
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
