package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/perfetto"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
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
	fs := flagSet("export", exportHelp, errOut)
	perfettoOut := fs.String("perfetto", "", "write the Chrome/Perfetto trace (JSON) to this file, - for stdout (required)")
	db := fs.String("db", "", "database written by analyze --db, instead of trace files")
	steps := fs.String("steps", "", "export these ProfilerSteps only, e.g. 3-7 or 5")
	ranksSpec := fs.String("ranks", "", "export these ranks only, e.g. 0,2 or 0-3")
	runID := fs.String("run", "", "run id (default: the name of the folder the traces are in; with --db, the only run)")
	host := fs.String("host", "", "host name to record for these traces")
	rank := fs.Int("rank", -1, "rank for a trace that names none in distributedInfo or its file name")
	config := fs.String("config", "", "config file (YAML, TOML or JSON); also TRAINSCOPE_CONFIG")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	switch {
	case *perfettoOut == "":
		return &usageError{"export: --perfetto OUT.json is required (see 'trainscope export --help')"}
	case *db == "" && fs.NArg() == 0:
		return &usageError{"export: give trace files or folders, or --db FILE"}
	case *db != "" && fs.NArg() > 0:
		return &usageError{"export: give trace files or --db, not both"}
	}
	if *runID != "" {
		if err := stream.CheckRunID(*runID); err != nil {
			return &usageError{"export: --run: " + err.Error()}
		}
	}
	window, err := parseSteps(*steps)
	if err != nil {
		return &usageError{"export: --steps: " + err.Error()}
	}
	ranks, err := parseRanks(*ranksSpec)
	if err != nil {
		return &usageError{"export: --ranks: " + err.Error()}
	}
	cfg, err := loadConfig(*config)
	if err != nil {
		return err
	}
	set, err := detectors.NewSet(cfg.DetectorsConfig())
	if err != nil {
		return &inputError{err}
	}
	var progress io.Writer
	if !*quiet {
		progress = errOut
	}
	var st *duck.Store
	if *db != "" {
		if _, err := os.Stat(*db); err != nil {
			return &inputError{fmt.Errorf("export: %w", err)}
		}
		st, err = duck.Open(ctx, *db, duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit})
		if err != nil {
			return err
		}
	} else {
		files, err := ingest.Discover(fs.Args())
		if err != nil {
			return &inputError{err}
		}
		st, err = duck.Open(ctx, "", duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit})
		if err != nil {
			return err
		}
		if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: *runID, Host: *host, Rank: *rank, Ranks: ranks,
			Progress: progress, Warn: warnTo(errOut)}); err != nil {
			st.Close()
			if ingest.IsInputError(err) {
				return &inputError{err}
			}
			return err
		}
	}
	defer st.Close()
	rep, err := detect(ctx, st, set, window, *steps, errOut)
	if err != nil {
		return err
	}
	run := *runID
	if *db == "" {
		run = "" // the loaded run is the report's only one
	}
	var stats perfetto.Stats
	path := *perfettoOut
	if path == "-" {
		path = "" // stdout
	}
	err = writeTo(path, out, func(w io.Writer) error {
		var err error
		stats, err = perfetto.Write(ctx, st, rep, w, perfetto.Options{Run: run, Ranks: ranks})
		return err
	})
	if err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintf(errOut, "perfetto: %s: %d events from %d rank(s), %d late arrival(s) marked with %d flow(s) to waiting peers; open it in https://ui.perfetto.dev\n",
			*perfettoOut, stats.Events, stats.Ranks, stats.LateArrivals, stats.Flows)
	}
	return nil
}
