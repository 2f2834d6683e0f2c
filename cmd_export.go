package main

import (
	"context"
	"io"

	"github.com/trainscope/trainscope/internal/analyze"
	"github.com/trainscope/trainscope/internal/cli"
)

const exportHelp = `Usage: trainscope export --perfetto OUT.json DIR_OR_FILES... [flags]
       trainscope export --perfetto OUT.json --db FILE [flags]

Writes the analysed window of a run as one Chrome trace (JSON) to open in
ui.perfetto.dev or chrome://tracing: a process per rank, a track per GPU
stream and host thread, clocks aligned across ranks on collective ends,
and the report's findings marked on it — an instant event where a rank
reached a collective last and held its peers up, a flow from there to
every peer that waited, and a marker per root cause with its headline and
fix. The traces are read (or the database written by 'analyze --db'
opened) and the detectors run as in analyze; the window is analyze's
(every step but the last, or --steps).

Examples:
  trainscope export --perfetto run.json traces/
  trainscope export --perfetto run.json traces/ --ranks 0-7 --steps 5
  trainscope export --perfetto run.json --db run.duckdb

Flags:
`

func runExport(ctx context.Context, args []string, out, errOut io.Writer) error {
	var o analyze.ExportOptions
	fs := cli.FlagSet("export", exportHelp, errOut)
	fs.StringVar(&o.Perfetto, "perfetto", "", "write the Chrome/Perfetto trace (JSON) to this file, - for stdout (required)")
	fs.StringVar(&o.DB, "db", "", "database written by analyze --db, instead of trace files")
	fs.StringVar(&o.Steps, "steps", "", "export these ProfilerSteps only, e.g. 3-7 or 5")
	fs.StringVar(&o.Ranks, "ranks", "", "export these ranks only, e.g. 0,2 or 0-3")
	fs.StringVar(&o.Run, "run", "", "run id (default: the name of the folder the traces are in; with --db, the only run)")
	fs.StringVar(&o.Host, "host", "", "host name to record for these traces")
	fs.IntVar(&o.Rank, "rank", -1, rankHelp)
	fs.StringVar(&o.Config, "config", "", configHelp)
	fs.BoolVarP(&o.Quiet, "quiet", "q", false, quietHelp)
	if err := cli.Parse(fs, args, out); err != nil {
		return err
	}
	return analyze.Export(ctx, fs.Args(), o, out, errOut)
}
