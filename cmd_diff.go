package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/trainscope/trainscope/detectors/report/html"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/diff"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

const diffHelp = `Usage: trainscope diff BASELINE NEW [flags]

Compares two runs, or two step windows of one run. First a verdict: which
run is slower per iteration, by how much, and which part of an iteration
moved (GPU compute, communication transfer, waiting for late ranks, memory
copies, GPU idle, host operators). Then the GPU kernels and host operators
that were added or removed, got slower or faster, or ran more or less
often, per iteration and rank, ordered by the time they moved.

An iteration is a ProfilerStep where the traces have them; otherwise the
NVTX range or compute kernel that repeats at the steadiest, longest period
(the same one in both runs where they share one), so that captures of
different lengths compare by the work done, not by the capture's time.
BASELINE and NEW are each a trace file or a folder of rank traces.

Examples:
  trainscope diff before/ after/
  trainscope diff run/ run/ --base-steps 3-4 --new-steps 9-10

Flags:
`

func runDiff(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flagSet("diff", diffHelp, errOut)
	format := fs.String("format", "md", "output format: md, json or html (one self-contained page)")
	baseSteps := fs.String("base-steps", "", "steps of the baseline to compare, e.g. 3-4")
	newSteps := fs.String("new-steps", "", "steps of the new run to compare")
	minRatio := fs.Float64("min-ratio", 1.1, "report a mean duration or call rate that changed by at least this factor")
	minDelta := fs.Float64("min-delta-us", 10, "and moved at least this many microseconds per step")
	top := fs.Int("top", 30, "rows to show")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	config := fs.String("config", "", "config file (YAML, TOML or JSON); also TRAINSCOPE_CONFIG")
	threads := threadsFlag(fs)
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return &usageError{"diff: give two traces or folders: BASELINE NEW (see 'trainscope diff --help')"}
	}
	if err := checkReportFormat("diff", *format); err != nil {
		return err
	}
	wb, err := parseSteps(*baseSteps)
	if err != nil {
		return &usageError{"diff: --base-steps: " + err.Error()}
	}
	wn, err := parseSteps(*newSteps)
	if err != nil {
		return &usageError{"diff: --new-steps: " + err.Error()}
	}
	cfg, err := loadConfig(*config)
	if err != nil {
		return err
	}
	if err := cfg.applyThreads("diff", *threads); err != nil {
		return err
	}
	st, err := duck.Open(ctx, "", duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit})
	if err != nil {
		return err
	}
	defer st.Close()
	var progress io.Writer
	if !*quiet {
		progress = errOut
	}
	for _, side := range []struct{ run, path string }{{"base", fs.Arg(0)}, {"new", fs.Arg(1)}} {
		files, err := ingest.Discover([]string{side.path})
		if err != nil {
			return &inputError{err}
		}
		if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: side.run, Rank: -1, Workers: cfg.Cores(), Progress: progress, Warn: warnTo(errOut)}); err != nil {
			if ingest.IsInputError(err) {
				return &inputError{err}
			}
			return err
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
	res, err := diff.Compare(ctx, st, "base", "new", diff.Options{MinRatio: *minRatio, MinDeltaNS: *minDelta * 1000, Top: *top})
	if err != nil {
		return err
	}
	if *format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"base": fs.Arg(0), "new": fs.Arg(1), "verdict": res.Verdict, "changes": res.Changes})
	}
	writeMD := func(w io.Writer) error { return diff.WriteMarkdown(w, fs.Arg(0), fs.Arg(1), res) }
	if *format == "html" {
		return html.WriteOf(out, writeMD)
	}
	return writeMD(out)
}
