package detectors

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"strings"

	"github.com/trainscope/trainscope/sql/duck"
)

//go:embed diff.sql
var diffSQL string

// DiffRow compares one kernel or operator between two runs, per step.
type DiffRow struct {
	Kind        string  `json:"kind"`
	Name        string  `json:"name"`
	Change      string  `json:"change"` // added, removed, slower, faster, more_frequent, less_frequent
	BaseCalls   float64 `json:"base_calls_per_step"`
	NewCalls    float64 `json:"new_calls_per_step"`
	BaseMeanNS  float64 `json:"base_mean_ns"`
	NewMeanNS   float64 `json:"new_mean_ns"`
	DeltaNSStep float64 `json:"delta_ns_per_step"`
}

// DiffOptions tune Diff.
type DiffOptions struct {
	MinRatio   float64 // a mean duration or call rate changed by at least this factor (default 1.1)
	MinDeltaNS float64 // and moved at least this much time per step (default 10 us)
	Top        int     // rows kept (default 30)
}

// Diff compares the GPU kernels and host operators of two runs already
// loaded in st (over each run's analysis window, per step so that windows
// of different lengths compare): what was added, removed, got slower or
// faster, or ran more or less often. Rows are ordered by the time per step
// they moved.
func Diff(ctx context.Context, st *duck.Store, baseRun, newRun string, opt DiffOptions) ([]DiffRow, error) {
	if opt.MinRatio <= 1 {
		opt.MinRatio = 1.1
	}
	if opt.MinDeltaNS <= 0 {
		opt.MinDeltaNS = 10_000
	}
	if opt.Top <= 0 {
		opt.Top = 30
	}
	q := strings.NewReplacer("$base", "'"+strings.ReplaceAll(baseRun, "'", "''")+"'",
		"$new", "'"+strings.ReplaceAll(newRun, "'", "''")+"'",
		"$min_ratio", fmt.Sprint(opt.MinRatio), "$min_delta_ns", fmt.Sprint(opt.MinDeltaNS),
		"$top", fmt.Sprint(opt.Top)).Replace(diffSQL)
	rows, err := st.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("trace diff: %w", err)
	}
	defer rows.Close()
	var out []DiffRow
	for rows.Next() {
		var r DiffRow
		if err := rows.Scan(&r.Kind, &r.Name, &r.Change, &r.BaseCalls, &r.NewCalls, &r.BaseMeanNS, &r.NewMeanNS, &r.DeltaNSStep); err != nil {
			return nil, err
		}
		r.BaseCalls, r.NewCalls = round(r.BaseCalls), round(r.NewCalls)
		r.BaseMeanNS, r.NewMeanNS, r.DeltaNSStep = round(r.BaseMeanNS), round(r.NewMeanNS), round(r.DeltaNSStep)
		out = append(out, r)
	}
	return out, rows.Err()
}

// WriteDiffMarkdown renders diff rows as a table.
func WriteDiffMarkdown(w io.Writer, baseRun, newRun string, rows []DiffRow) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# trainscope diff: `%s` -> `%s`\n\n", baseRun, newRun)
	if len(rows) == 0 {
		b.WriteString("No kernel or operator changed by more than the thresholds.\n")
	} else {
		b.WriteString("Per step of each run's analysis window; ordered by the time per step that moved.\n\n")
		cols := []string{"change", "kind", "name", "base_calls", "new_calls", "base_mean_ns", "new_mean_ns", "delta_per_step_ns"}
		var data [][]any
		for _, r := range rows {
			data = append(data, []any{r.Change, r.Kind, r.Name, r.BaseCalls, r.NewCalls, r.BaseMeanNS, r.NewMeanNS, r.DeltaNSStep})
		}
		writeTable(&b, cols, data)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
