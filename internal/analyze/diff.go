package analyze

import (
	"context"
	"encoding/json"
	"io"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/diff"
	"github.com/trainscope/trainscope/detectors/report/html"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/sql/duck"
)

// DiffOptions are 'trainscope diff's flags.
type DiffOptions struct {
	Format               string
	BaseSteps, NewSteps  string
	MinRatio, MinDeltaUS float64
	Top                  int
	Quiet                bool
	Config               string
	Threads              int
}

// Diff compares two runs, or two step windows of one, given as args
// (BASELINE NEW, each a trace or a folder): 'trainscope diff'.
func Diff(ctx context.Context, args []string, o DiffOptions, out, errOut io.Writer) error {
	if len(args) != 2 {
		return cli.Usage("diff: give two traces or folders: BASELINE NEW (see 'trainscope diff --help')")
	}
	if err := checkFormat("diff", o.Format); err != nil {
		return err
	}
	wb, err := stepsFlag("diff", "--base-steps", o.BaseSteps)
	if err != nil {
		return err
	}
	wn, err := stepsFlag("diff", "--new-steps", o.NewSteps)
	if err != nil {
		return err
	}
	cfg, err := loadConfig("diff", o.Config, o.Threads)
	if err != nil {
		return err
	}
	st, err := duck.Open(ctx, "", duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit})
	if err != nil {
		return err
	}
	defer st.Close()
	for _, side := range []struct{ run, path string }{{"base", args[0]}, {"new", args[1]}} {
		files, err := ingest.Discover([]string{side.path})
		if err != nil {
			return cli.Input(err)
		}
		if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: side.run, Rank: -1, Workers: cfg.Cores(), ReadMemory: cfg.ReadMemoryBytes(), Progress: progressTo(errOut, o.Quiet), Warn: cli.Warn(errOut)}); err != nil {
			return inputErr(err)
		}
	}
	if err := detectors.SetWindow(ctx, st, detectors.Window{}); err != nil {
		return err
	}
	for _, w := range []struct {
		run string
		win detectors.Window
	}{{"base", wb}, {"new", wn}} {
		if w.win.Set {
			if err := st.Exec(ctx, "UPDATE analysis_window SET step_lo = ?, step_hi = ? WHERE run_id = ?", w.win.StepLo, w.win.StepHi, w.run); err != nil {
				return err
			}
		}
	}
	res, err := diff.Compare(ctx, st, "base", "new", diff.Options{MinRatio: o.MinRatio, MinDeltaNS: o.MinDeltaUS * 1000, Top: o.Top})
	if err != nil {
		return err
	}
	if o.Format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"base": args[0], "new": args[1], "verdict": res.Verdict, "changes": res.Changes})
	}
	writeMD := func(w io.Writer) error { return diff.WriteMarkdown(w, args[0], args[1], res) }
	if o.Format == "html" {
		return html.WriteOf(out, writeMD)
	}
	return writeMD(out)
}
