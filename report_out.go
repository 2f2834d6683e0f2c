package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/trainscope/trainscope/detectors/report/html"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/sql/archive"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// detect runs the analysis pipeline (detectors.Analyze), refusing a
// --steps range the traces do not have: the part analyze, profile and
// report share. A detector that fails is named on errOut and in the
// report; the others' results still come out.
func detect(ctx context.Context, st *duck.Store, set *detectors.Set, window detectors.Window, stepsSpec string, errOut io.Writer) (*detectors.Report, error) {
	opt := detectors.AnalyzeOptions{Window: window, OnFailure: func(f detectors.DetectorFailure) {
		warnTo(errOut)(f.Error + `; the report lists it under "Detectors that failed" and holds every other detector's results`)
	}}
	if window.Set {
		opt.AfterWindow = func(ctx context.Context, st *duck.Store) error { return checkSteps(ctx, st, stepsSpec) }
	}
	return detectors.Analyze(ctx, st, set, opt)
}

// archiveRuns adds every run in st to the fleet archive (serve.archive).
func archiveRuns(ctx context.Context, cfg *Config, st *duck.Store, errOut io.Writer, quiet bool) error {
	staging, err := os.MkdirTemp("", "trainscope-archive-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	dir, upload, err := archiveTarget(cfg, staging)
	if err != nil {
		return err
	}
	rows, err := st.Query(ctx, "SELECT run_id FROM runs ORDER BY run_id")
	if err != nil {
		return err
	}
	var runs []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			rows.Close()
			return err
		}
		runs = append(runs, r)
	}
	rows.Close()
	for _, r := range runs {
		w, err := archive.WriteRun(ctx, st, dir, r, time.Now())
		if err == nil && upload != nil {
			err = upload(ctx, dir, w)
		}
		if err != nil {
			return err
		}
		if !quiet {
			fmt.Fprintf(errOut, "archive: run %s, %d files (%.1f MB) in %s\n", r, w.Files, float64(w.Bytes)/1e6,
				strings.TrimRight(cfg.Serve.Archive, "/")+"/*/day="+w.Day+"/run="+stream.RunPathToken(r))
		}
	}
	return nil
}

// warnTo writes the readers' warnings (repaired input) to w, one a line.
func warnTo(w io.Writer) func(string) {
	return func(line string) { fmt.Fprintf(w, "trainscope: warning: %s\n", line) }
}

// reportFormats are the --format values of the commands that write a
// report.
const reportFormats = "md, json or html"

// checkReportFormat is the usage error for a --format that is not one of
// reportFormats.
func checkReportFormat(cmd, format string) error {
	switch format {
	case "md", "json", "html":
		return nil
	}
	return &usageError{fmt.Sprintf("%s: --format %q: want %s", cmd, format, reportFormats)}
}

// writeReport writes rep as markdown (one screen, or with every table
// and finding when full), JSON or HTML to path, or to out when path is
// empty.
func writeReport(rep *detectors.Report, format string, full bool, path string, out io.Writer) error {
	return writeTo(path, out, func(w io.Writer) error {
		switch {
		case format == "json":
			return rep.WriteJSON(w)
		case format == "html":
			return html.Write(w, rep)
		case full:
			return rep.WriteMarkdownFull(w)
		}
		return rep.WriteMarkdown(w)
	})
}

// fullHelp is the --full flag's help.
const fullHelp = "markdown: append every metric table and every finding in full (JSON and HTML always have them)"

// writeTo runs write on the file at path (created or truncated), or on out
// when path is empty; a failed close (a full disk) is an error too.
func writeTo(path string, out io.Writer, write func(io.Writer) error) error {
	if path == "" {
		return write(out)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
