package main

import (
	"context"
	"io"

	"github.com/trainscope/trainscope/internal/analyze"
	"github.com/trainscope/trainscope/internal/cli"
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
	var o analyze.DiffOptions
	fs := cli.FlagSet("diff", diffHelp, errOut)
	fs.StringVar(&o.Format, "format", "md", "output format: md, json or html (one self-contained page)")
	fs.StringVar(&o.BaseSteps, "base-steps", "", "steps of the baseline to compare, e.g. 3-4")
	fs.StringVar(&o.NewSteps, "new-steps", "", "steps of the new run to compare")
	fs.Float64Var(&o.MinRatio, "min-ratio", 1.1, "report a mean duration or call rate that changed by at least this factor")
	fs.Float64Var(&o.MinDeltaUS, "min-delta-us", 10, "and moved at least this many microseconds per step")
	fs.IntVar(&o.Top, "top", 30, "rows to show")
	fs.BoolVarP(&o.Quiet, "quiet", "q", false, quietHelp)
	fs.StringVar(&o.Config, "config", "", configHelp)
	cli.ThreadsVar(fs, &o.Threads)
	if err := cli.Parse(fs, args, out); err != nil {
		return err
	}
	return analyze.Diff(ctx, fs.Args(), o, out, errOut)
}
