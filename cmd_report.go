package main

import (
	"context"
	"io"

	"github.com/trainscope/trainscope/internal/analyze"
	"github.com/trainscope/trainscope/internal/cli"
)

const reportHelp = `Usage: trainscope report --db FILE [--steps N-M] [--format md|json|html] [flags]

Runs the detectors again on a database written by 'trainscope analyze --db'
(or profile --db) and prints the report, without reading the traces again:
to try other thresholds (--config, --detectors) or another step window.
The findings and metrics stored in the database are replaced.

Flags:
`

func runReport(ctx context.Context, args []string, out, errOut io.Writer) error {
	var o analyze.ReportOptions
	fs := cli.FlagSet("report", reportHelp, errOut)
	fs.StringVar(&o.DB, "db", "", "database written by analyze --db (required)")
	fs.StringVar(&o.Format, "format", "md", formatHelp)
	fs.BoolVar(&o.Full, "full", false, fullHelp)
	fs.StringVar(&o.Steps, "steps", "", "analyse these ProfilerSteps only, e.g. 3-7")
	fs.StringVarP(&o.Out, "out", "o", "", outHelp)
	fs.StringVar(&o.Config, "config", "", configHelp)
	fs.StringArrayVar(&o.Detectors, "detectors", nil, detectorsHelp)
	cli.ThreadsVar(fs, &o.Threads)
	if err := cli.Parse(fs, args, out); err != nil {
		return err
	}
	return analyze.Report(ctx, fs.Args(), o, out, errOut)
}
