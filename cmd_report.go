package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/sql/duck"
)

const reportHelp = `Usage: trainscope report --db FILE [--steps N-M] [--format md|json|html] [flags]

Runs the detectors again on a database written by 'trainscope analyze --db'
(or profile --db) and prints the report, without reading the traces again:
to try other thresholds (--config, --detectors) or another step window.
The findings and metrics stored in the database are replaced.

Flags:
`

func runReport(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flagSet("report", reportHelp, errOut)
	db := fs.String("db", "", "database written by analyze --db (required)")
	format := fs.String("format", "md", "report format: md, json or html (one self-contained page)")
	full := fs.Bool("full", false, fullHelp)
	steps := fs.String("steps", "", "analyse these ProfilerSteps only, e.g. 3-7")
	outPath := fs.StringP("out", "o", "", "write the report to this file instead of stdout")
	config := fs.String("config", "", "config file (YAML, TOML or JSON); also TRAINSCOPE_CONFIG")
	dirs := fs.StringArray("detectors", nil, "extra folder of .sql detectors (repeatable)")
	threads := threadsFlag(fs)
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if *db == "" {
		return &usageError{"report: --db FILE is required (write one with 'trainscope analyze --db FILE')"}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("report: unexpected argument %q", fs.Arg(0))}
	}
	if err := checkReportFormat("report", *format); err != nil {
		return err
	}
	window, err := parseSteps(*steps)
	if err != nil {
		return &usageError{"report: --steps: " + err.Error()}
	}
	cfg, err := loadConfig(*config)
	if err != nil {
		return err
	}
	if err := cfg.applyThreads("report", *threads); err != nil {
		return err
	}
	if _, err := os.Stat(*db); err != nil {
		return &inputError{fmt.Errorf("report: %w", err)}
	}
	cfg.Detectors.Dirs = append(cfg.Detectors.Dirs, *dirs...)
	set, err := detectors.NewSet(cfg.DetectorsConfig())
	if err != nil {
		return &inputError{err}
	}
	set.Workers = cfg.Cores()
	st, err := duck.Open(ctx, *db, duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit, MaxConns: set.Workers})
	if err != nil {
		return err
	}
	defer st.Close()
	if n := hostRowsWithoutDerived(ctx, st); n > 0 {
		fmt.Fprintf(errOut, "warning: %s was written by an older trainscope: %d host slices have no call stack or GPU busy time, so host_exposed and runtime_api cannot measure them; run 'trainscope analyze --db' on the traces again\n", *db, n)
	}
	rep, err := detect(ctx, st, set, window, *steps, errOut)
	if err != nil {
		return err
	}
	return writeReport(rep, *format, *full, *outPath, out)
}

// hostRowsWithoutDerived counts host slices that lack the columns readers
// derive since schema version 3 (stack_id, gpu_busy_dur): a database an
// older build wrote, whose exposure detectors would read them as empty.
func hostRowsWithoutDerived(ctx context.Context, st *duck.Store) int64 {
	var n int64
	err := st.Conn().QueryRowContext(ctx, `SELECT count(*) FROM slices_core
		WHERE kind IN ('runtime', 'driver', 'cpu_op', 'python', 'annotation') AND (gpu_busy_dur IS NULL OR stack_id IS NULL)`).Scan(&n)
	if err != nil {
		return 0
	}
	return n
}
