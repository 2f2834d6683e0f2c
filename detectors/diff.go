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

// DiffRow compares one kernel or operator between two runs, per iteration
// and rank (the JSON names keep "per_step" for readers of older reports).
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
	// BaseUnits and NewUnits divide each run's totals: iterations times
	// ranks (CountIterations). Zero counts them.
	BaseUnits, NewUnits float64
}

// DiffResult is a diff's verdict and its kernel and operator rows.
type DiffResult struct {
	Verdict DiffVerdict `json:"verdict"`
	Changes []DiffRow   `json:"changes"`
}

// CompareRuns cuts both runs into iterations (CountIterations), compares
// their kernels and operators per iteration and rank (Diff), and says which
// run is slower and what moved (Verdict).
func CompareRuns(ctx context.Context, st *duck.Store, baseRun, newRun string, opt DiffOptions) (DiffResult, error) {
	its, err := CountIterations(ctx, st, baseRun, newRun)
	if err != nil {
		return DiffResult{}, err
	}
	b, n := its[baseRun], its[newRun]
	opt.BaseUnits, opt.NewUnits = b.Count*float64(max(b.Ranks, 1)), n.Count*float64(max(n.Ranks, 1))
	rows, err := Diff(ctx, st, baseRun, newRun, opt)
	if err != nil {
		return DiffResult{}, err
	}
	if rows == nil {
		rows = []DiffRow{}
	}
	return DiffResult{Verdict: Verdict(*b, *n, rows), Changes: rows}, nil
}

// Diff compares the GPU kernels and host operators of two runs already
// loaded in st (over each run's analysis window, per iteration and rank so
// that windows of different lengths and jobs of different sizes compare):
// what was added, removed, got slower or faster, or ran more or less
// often. Rows are ordered by the time per iteration they moved.
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
	if opt.BaseUnits <= 0 || opt.NewUnits <= 0 {
		its, err := CountIterations(ctx, st, baseRun, newRun)
		if err != nil {
			return nil, err
		}
		b, n := its[baseRun], its[newRun]
		opt.BaseUnits, opt.NewUnits = b.Count*float64(max(b.Ranks, 1)), n.Count*float64(max(n.Ranks, 1))
	}
	q := strings.NewReplacer("$base", "'"+strings.ReplaceAll(baseRun, "'", "''")+"'",
		"$new", "'"+strings.ReplaceAll(newRun, "'", "''")+"'",
		"$n_base", fmt.Sprint(opt.BaseUnits), "$n_new", fmt.Sprint(opt.NewUnits),
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

// WriteDiffMarkdown renders a diff: the verdict, how each run was cut
// into iterations, what moved, and the kernel and operator rows.
func WriteDiffMarkdown(w io.Writer, baseRun, newRun string, res DiffResult) error {
	var b strings.Builder
	v := res.Verdict
	fmt.Fprintf(&b, "# trainscope diff: `%s` -> `%s`\n\n## Verdict\n\n**%s**\n\n", baseRun, newRun, v.Text)
	b.WriteString(iterationLine("baseline", v.Base) + "\n")
	b.WriteString(iterationLine("new", v.New) + "\n\n")
	if len(v.Moved) > 0 {
		b.WriteString("## Where an iteration's time went\n\nPer iteration and rank, mean over ranks; the GPU parts add up to the GPU span, host time runs beside them.\n\n")
		var data [][]any
		for _, m := range v.Moved {
			data = append(data, []any{m.Part, Duration(m.BaseNS), Duration(m.NewNS), signed(m.DeltaNS)})
		}
		writeTable(&b, []string{"part", "baseline", "new", "change"}, data)
		b.WriteString("\n")
	}
	b.WriteString("## Kernels and operators\n\n")
	if len(res.Changes) == 0 {
		b.WriteString("No kernel or operator changed by more than the thresholds.\n")
	} else {
		b.WriteString("Per iteration and rank; ordered by the time per iteration that moved.\n\n")
		cols := []string{"change", "kind", "name", "base_calls", "new_calls", "base_mean_ns", "new_mean_ns", "delta_per_iter_ns"}
		var data [][]any
		for _, r := range res.Changes {
			data = append(data, []any{r.Change, r.Kind, r.Name, r.BaseCalls, r.NewCalls, r.BaseMeanNS, r.NewMeanNS, r.DeltaNSStep})
		}
		writeTable(&b, cols, data)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
