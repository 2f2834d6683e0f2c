package live

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/detectors/report/html"
	"github.com/trainscope/trainscope/sql/archive"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// analyze makes one pass over run and reports whether its report is
// partial. why, when set, is what the stream still holds for it.
func (s *Scheduler) analyze(ctx context.Context, run, why string) (bool, error) {
	t0 := time.Now()
	scratch, err := duck.Open(ctx, "", duck.Options{Threads: s.cfg.Threads, MemoryLimit: s.cfg.MemoryLimit, MaxConns: s.set.Workers})
	if err != nil {
		return false, err
	}
	defer scratch.Close()
	s.mu.Lock()
	err = copyRun(ctx, s.st, scratch, run, duck.RunTables)
	var missing []string
	if err == nil {
		missing, err = rejectedOf(ctx, s.st, run)
	}
	s.mu.Unlock()
	if err != nil {
		return false, err
	}
	status, err := runStatus(ctx, scratch, why, missing)
	if err != nil {
		return false, err
	}
	// the window analyze uses: every step but the last (often cut short)
	var window detectors.Window
	rr := &Report{Run: run, At: s.opts.Now().UTC(), Status: status, Partial: status != nil && status.Partial}
	rep, err := detectors.Analyze(ctx, scratch, s.set, detectors.AnalyzeOptions{
		AfterWindow: func(ctx context.Context, st *duck.Store) (err error) {
			window, err = windowSteps(ctx, st)
			return err
		},
		OnFailure: func(f report.DetectorFailure) {
			s.DetectorErrors.Add(1)
			s.opts.Logf("run %s: %s (the report lists it; the other detectors ran)", run, f.Error)
		},
		Status: status,
		At:     rr.At,
	})
	if err != nil {
		return false, err
	}
	if window.Set {
		rr.StepLo, rr.StepHi = &window.StepLo, &window.StepHi
	}
	rr.Findings = len(rep.Findings)
	var md, js, page bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		return false, err
	}
	if err := rep.WriteJSON(&js); err != nil {
		return false, err
	}
	if err := html.Write(&page, rep); err != nil {
		return false, err
	}
	rr.MD, rr.JSON, rr.HTML = md.Bytes(), js.Bytes(), page.Bytes()

	took := time.Since(t0)
	var statusText any
	if status != nil {
		statusText = strings.Join(append(append([]string(nil), status.Reasons...), status.Missing...), "; ")
	}
	s.mu.Lock()
	err = s.st.Tx(ctx, func() error {
		tables := []string{"findings", "metrics", "root_causes"}
		if !rr.Partial {
			// a partial pass leaves the run's node history as the last
			// final pass made it
			tables = append(tables, "node_history")
		}
		for _, t := range tables {
			if err := s.st.Exec(ctx, "DELETE FROM "+t+" WHERE run_id = ?", run); err != nil {
				return err
			}
		}
		if err := copyRun(ctx, scratch, s.st, run, tables); err != nil {
			return err
		}
		var lo, hi any
		if window.Set {
			lo, hi = window.StepLo, window.StepHi
		}
		var ranks int
		if err := scratch.Conn().QueryRowContext(ctx, "SELECT count(*) FROM ranks").Scan(&ranks); err != nil {
			return err
		}
		analysis := []any{run, rr.At.UnixNano(), lo, hi, ranks, rr.Findings, float64(took.Microseconds()) / 1e3, rr.Partial, statusText}
		if err := scratch.Exec(ctx, insertAnalysis, analysis...); err != nil { // for the archive
			return err
		}
		return s.st.Exec(ctx, insertAnalysis, analysis...)
	})
	s.mu.Unlock()
	if err != nil {
		return false, fmt.Errorf("store findings: %w", err)
	}
	if err := s.save(rr); err != nil {
		return false, err
	}
	if s.cfg.ArchiveDir != "" && !rr.Partial {
		w, err := archive.WriteRun(ctx, scratch, s.cfg.ArchiveDir, run, rr.At)
		if err == nil && s.cfg.Upload != nil {
			err = s.cfg.Upload(ctx, s.cfg.ArchiveDir, w)
		}
		if err != nil {
			s.ArchiveErrors.Add(1)
			s.opts.Logf("run %s: archive: %v (the archive lacks this pass until the run's next final pass)", run, err)
		} else {
			s.Archived.Add(1)
			s.opts.Logf("archived run %s: %d files, %d bytes, day %s", run, w.Files, w.Bytes, w.Day)
		}
	}
	s.state.Lock()
	s.reports[run] = rr
	s.state.Unlock()
	s.Passes.Add(1)
	s.LastNS.Store(int64(took))
	s.passTime.Observe(took.Seconds())
	kind := "analyzed"
	if rr.Partial {
		kind = "analyzed (partial: " + strings.Join(status.Reasons, "; ") + ")"
	}
	s.opts.Logf("%s run %s: %d findings in %s", kind, run, rr.Findings, took.Round(time.Millisecond))
	return rr.Partial, nil
}

const insertAnalysis = `INSERT INTO analyses (run_id, analyzed_ns, step_lo, step_hi, ranks, findings, took_ms, partial, status)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// runStatus is the status of the run copied into scratch: partial while
// something is on its way (why), or while a rank has rows but no ranks row
// (a trace's ranks row is published last, after all its batches); missing
// lists rejected batches and those that never arrived. Nil when the data
// is all in.
func runStatus(ctx context.Context, scratch *duck.Store, why string, missing []string) (*report.RunStatus, error) {
	var st report.RunStatus
	if why != "" {
		st.Partial, st.Reasons = true, append(st.Reasons, why)
	}
	var incomplete []int
	rows, err := scratch.Query(ctx, `
		SELECT DISTINCT rank FROM (
			SELECT rank FROM slices_core UNION ALL SELECT rank FROM slices_detail UNION ALL SELECT rank FROM steps
			UNION ALL SELECT rank FROM threads UNION ALL SELECT rank FROM stacks UNION ALL SELECT rank FROM mem_segments
			UNION ALL SELECT rank FROM mem_events)
		WHERE rank NOT IN (SELECT rank FROM ranks) ORDER BY rank`)
	if err != nil {
		return nil, fmt.Errorf("incomplete ranks: %w", err)
	}
	for rows.Next() {
		var r int
		if err := rows.Scan(&r); err != nil {
			rows.Close()
			return nil, err
		}
		incomplete = append(incomplete, r)
	}
	rows.Close()
	if len(incomplete) > 0 {
		st.Partial = true
		st.Reasons = append(st.Reasons, fmt.Sprintf("rank(s) %s have rows but their traces are not complete yet (no ranks row)", mdfmt.RankRanges(incomplete)))
	}
	st.Missing = missing
	if !st.Partial && len(st.Missing) == 0 {
		return nil, nil
	}
	return &st, nil
}

// rejectedOf describes the batches of run that are not in the store:
// those rejected, and those its traces declared that never arrived (the
// ingestor records them in rejected_batches too, stream.MissingReason).
func rejectedOf(ctx context.Context, st *duck.Store, run string) ([]string, error) {
	var out []string
	rows, err := st.Query(ctx, `SELECT headers, count(*) FROM rejected_batches WHERE run_token = ? AND starts_with(reason, ?)
		GROUP BY headers ORDER BY headers`, stream.RunToken(run), stream.MissingReason)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var hdr *string
		var n int
		if err := rows.Scan(&hdr, &n); err != nil {
			rows.Close()
			return nil, err
		}
		what := "its traces"
		declared := ""
		if hdr != nil {
			if g, err := stream.ParseGap(*hdr); err == nil {
				what, declared = g.Artifact, fmt.Sprintf(" of %d", g.Declared)
			}
		}
		out = append(out, fmt.Sprintf("%d%s batches of %s never arrived: the stream no longer held them when the ingestor got there "+
			"(dropped at its limits, stream.discard: old with stream.max_bytes or stream.max_age, or deleted; see rejected_batches)", n, declared, what))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var n int
	var first *string
	err = st.Conn().QueryRowContext(ctx, "SELECT count(*), arg_min(reason, rejected_ns) FROM rejected_batches WHERE run_token = ? AND NOT starts_with(reason, ?)",
		stream.RunToken(run), stream.MissingReason).Scan(&n, &first)
	if err != nil || n == 0 {
		return out, err
	}
	reason := ""
	if first != nil {
		reason = *first
		if len(reason) > 160 {
			reason = reason[:160] + "..."
		}
	}
	return append([]string{fmt.Sprintf("%d batch(es) of this run were rejected and are not in it (the first: %s; see rejected_batches)", n, reason)}, out...), nil
}

// copyRun copies the rows of run in tables from src to dst through Arrow.
func copyRun(ctx context.Context, src, dst *duck.Store, run string, tables []string) error {
	for _, t := range tables {
		rdr, err := src.QueryArrow(ctx, src.RunRows(t, run), run)
		if err != nil {
			return fmt.Errorf("copy %s: %w", t, err)
		}
		var recs []arrow.RecordBatch
		for rdr.Next() {
			rec := rdr.RecordBatch()
			rec.Retain()
			recs = append(recs, rec)
		}
		err = rdr.Err()
		rdr.Release()
		if err == nil {
			err = dst.InsertAll(ctx, t, recs)
		}
		for _, r := range recs {
			r.Release()
		}
		if err != nil {
			return fmt.Errorf("copy %s: %w", t, err)
		}
	}
	return nil
}

// windowSteps is the step range analysis_window holds over all ranks.
func windowSteps(ctx context.Context, st *duck.Store) (detectors.Window, error) {
	var lo, hi *int
	err := st.Conn().QueryRowContext(ctx, "SELECT min(step_lo), max(step_hi) FROM analysis_window").Scan(&lo, &hi)
	if err != nil || lo == nil || hi == nil {
		return detectors.Window{}, err
	}
	return detectors.Window{StepLo: *lo, StepHi: *hi, Set: true}, nil
}
