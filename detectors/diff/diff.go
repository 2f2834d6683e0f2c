package diff

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/sql/duck"
)

//go:embed diff.sql
var diffSQL string

// Row compares one kernel or operator between two runs, per iteration
// and rank (the JSON names keep "per_step" for readers of older reports).
type Row struct {
	Kind        string  `json:"kind"`
	Name        string  `json:"name"`
	Change      string  `json:"change"` // added, removed, slower, faster, more_frequent, less_frequent
	BaseCalls   float64 `json:"base_calls_per_step"`
	NewCalls    float64 `json:"new_calls_per_step"`
	BaseMeanNS  float64 `json:"base_mean_ns"`
	NewMeanNS   float64 `json:"new_mean_ns"`
	DeltaNSStep float64 `json:"delta_ns_per_step"`
}

// Options tune Changes.
type Options struct {
	MinRatio   float64 // a mean duration or call rate changed by at least this factor (default 1.1)
	MinDeltaNS float64 // and moved at least this much time per step (default 10 us)
	Top        int     // rows kept (default 30)
	// BaseUnits and NewUnits divide each run's totals: iterations times
	// ranks (CountIterations). Zero counts them.
	BaseUnits, NewUnits float64
}

// Result is a diff's verdict and its kernel and operator rows.
type Result struct {
	Verdict Verdict `json:"verdict"`
	Changes []Row   `json:"changes"`
}

// Compare cuts both runs into iterations (CountIterations), compares
// their kernels and operators per iteration and rank (Changes), and says which
// run is slower and what moved (Judge).
func Compare(ctx context.Context, st *duck.Store, baseRun, newRun string, opt Options) (Result, error) {
	its, err := CountIterations(ctx, st, baseRun, newRun)
	if err != nil {
		return Result{}, err
	}
	b, n := its[baseRun], its[newRun]
	opt.BaseUnits, opt.NewUnits = b.Count*float64(max(b.Ranks, 1)), n.Count*float64(max(n.Ranks, 1))
	rows, err := Changes(ctx, st, baseRun, newRun, opt)
	if err != nil {
		return Result{}, err
	}
	if rows == nil {
		rows = []Row{}
	}
	return Result{Verdict: Judge(*b, *n, rows), Changes: rows}, nil
}

// Changes compares the GPU kernels and host operators of two runs already
// loaded in st (over each run's analysis window, per iteration and rank so
// that windows of different lengths and jobs of different sizes compare):
// what was added, removed, got slower or faster, or ran more or less
// often. Rows are ordered by the time per iteration they moved.
func Changes(ctx context.Context, st *duck.Store, baseRun, newRun string, opt Options) ([]Row, error) {
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
	var out []Row
	for rows.Next() {
		var r Row
		if err := rows.Scan(&r.Kind, &r.Name, &r.Change, &r.BaseCalls, &r.NewCalls, &r.BaseMeanNS, &r.NewMeanNS, &r.DeltaNSStep); err != nil {
			return nil, err
		}
		r.BaseCalls, r.NewCalls = mdfmt.Round(r.BaseCalls), mdfmt.Round(r.NewCalls)
		r.BaseMeanNS, r.NewMeanNS, r.DeltaNSStep = mdfmt.Round(r.BaseMeanNS), mdfmt.Round(r.NewMeanNS), mdfmt.Round(r.DeltaNSStep)
		out = append(out, r)
	}
	return out, rows.Err()
}

// WriteMarkdown renders a diff: the verdict, how each run was cut
// into iterations, what moved, and the kernel and operator rows.
func WriteMarkdown(w io.Writer, baseRun, newRun string, res Result) error {
	var b strings.Builder
	v := res.Verdict
	fmt.Fprintf(&b, "# trainscope diff: `%s` -> `%s`\n\n## Verdict\n\n**%s**\n\n", baseRun, newRun, v.Text)
	b.WriteString(iterationLine("baseline", v.Base) + "\n")
	b.WriteString(iterationLine("new", v.New) + "\n\n")
	if len(v.Moved) > 0 {
		b.WriteString("## Where an iteration's time went\n\nPer iteration and rank, mean over ranks; the GPU parts add up to the GPU span, host time runs beside them.\n\n")
		var data [][]any
		for _, m := range v.Moved {
			data = append(data, []any{m.Part, mdfmt.Duration(m.BaseNS), mdfmt.Duration(m.NewNS), mdfmt.Signed(m.DeltaNS)})
		}
		mdfmt.Table(&b, []string{"part", "baseline", "new", "change"}, data)
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
		mdfmt.Table(&b, cols, data)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
