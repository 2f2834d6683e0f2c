package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// scheduler runs the detectors over a run once its data has landed: when
// the run has received nothing for cfg.Quiet and nothing of it is pending
// (every message the stream holds for it is stored, see ingest.Backlog),
// or cfg.Timeout after its first unanalyzed batch whatever is pending. A
// report made while something is pending, or while a rank of the run has
// rows but not its ranks row (its trace is not complete), is partial: it
// says so, it is recorded as partial (alert rules skip such runs), and the
// run is analysed again once the rest has arrived. The window is
// analyze's default (every step but the last of each rank, which the
// profiler often cuts short), so that a final report of a run served live
// equals analyze's report of the same traces. Findings and metrics of the
// run are replaced, the pass is logged in analyses, and the report is kept
// for /runs/<id>/report.
//
// Each pass copies the run into a scratch in-memory database and analyzes
// it there, so that detectors (which work on everything in a database) see
// that run only, and ingestion waits only for the copy.
//
// Time comes from now and passes are checked on each tick, both given by
// the caller, so that tests decide when a run is due.
type scheduler struct {
	st      *duck.Store
	mu      *sync.Mutex // the store's writer lock, shared with the consumer
	set     *detectors.Set
	cfg     ServeConfig
	duckCfg DuckDBConfig
	logf    func(string, ...any)
	now     func() time.Time
	// pendingWhy says why a run's data is not all stored yet, or "".
	pendingWhy func(ctx context.Context, run string) (string, error)

	state   sync.Mutex
	pending map[string]*pendingRun
	reports map[string]*liveReport

	Passes, Failures atomic.Int64
	DetectorErrors   atomic.Int64 // detectors that failed within a pass that went on
	LastNS           atomic.Int64 // duration of the last pass
	// observePass, if set, hears how long each pass took
	observePass func(time.Duration)
}

type pendingRun struct {
	first, last time.Time
	commits     int64 // commits that touched the run: new data since a pass began?
	partial     bool  // its latest report is partial
}

// liveReport is the latest analysis of a run.
type liveReport struct {
	Run            string               `json:"run_id"`
	At             time.Time            `json:"analyzed_at"`
	StepLo         *int                 `json:"step_lo,omitempty"`
	StepHi         *int                 `json:"step_hi,omitempty"`
	Findings       int                  `json:"findings"`
	Partial        bool                 `json:"partial"`
	Status         *detectors.RunStatus `json:"status,omitempty"`
	md, json, html []byte
}

func newScheduler(st *duck.Store, mu *sync.Mutex, set *detectors.Set, cfg ServeConfig, dcfg DuckDBConfig, logf func(string, ...any)) *scheduler {
	return &scheduler{st: st, mu: mu, set: set, cfg: cfg, duckCfg: dcfg, logf: logf, now: time.Now,
		pendingWhy: func(context.Context, string) (string, error) { return "", nil },
		pending:    map[string]*pendingRun{}, reports: map[string]*liveReport{}}
}

// touched is the consumer's OnCommit: these runs got new rows.
func (s *scheduler) touched(runs map[string]bool) {
	now := s.now()
	s.state.Lock()
	defer s.state.Unlock()
	for run := range runs {
		p := s.pending[run]
		if p == nil {
			p = &pendingRun{first: now}
			s.pending[run] = p
		}
		p.last = now
		p.commits++
	}
}

// run makes a pass over due runs at every tick until ctx is done.
func (s *scheduler) run(ctx context.Context, ticks <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		s.step(ctx)
	}
}

// tickEvery is the scheduler's tick when nobody gives one.
func (s *scheduler) tickEvery() time.Duration { return max(s.cfg.Quiet/4, 50*time.Millisecond) }

type dueRun struct {
	run     string
	overdue bool  // cfg.Timeout since its first unanalyzed batch
	commits int64 // when it was found due
}

// step analyzes the runs that are due now: quiet and complete, or overdue.
func (s *scheduler) step(ctx context.Context) {
	for _, d := range s.due(s.now()) {
		why, err := s.pendingWhy(ctx, d.run)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			why = "whether all of it is stored cannot be told: " + err.Error()
		}
		if why != "" && !d.overdue {
			continue // the rest is on its way; wait for it, up to the timeout
		}
		partial, err := s.analyze(ctx, d.run, why)
		if err != nil {
			if ctx.Err() != nil {
				return // shutting down: the next start analyzes it again
			}
			s.Failures.Add(1)
			s.logf("analyze run %s: %v", d.run, err)
		}
		s.settle(d, partial && err == nil)
	}
}

func (s *scheduler) due(now time.Time) []dueRun {
	s.state.Lock()
	defer s.state.Unlock()
	var out []dueRun
	for run, p := range s.pending {
		quiet, overdue := now.Sub(p.last) >= s.cfg.Quiet, now.Sub(p.first) >= s.cfg.Timeout
		if quiet || overdue {
			out = append(out, dueRun{run: run, overdue: overdue, commits: p.commits})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].run < out[j].run })
	return out
}

// settle records what became of a due run: analyzed for good, or partial
// and to be looked at again (its timeout starts over). Data that came in
// during the pass keeps it pending as it is.
func (s *scheduler) settle(d dueRun, partial bool) {
	s.state.Lock()
	defer s.state.Unlock()
	p := s.pending[d.run]
	switch {
	case p == nil || p.commits != d.commits:
	case partial:
		p.partial, p.first = true, s.now()
	default:
		delete(s.pending, d.run)
	}
}

// analyze makes one pass over run and reports whether its report is
// partial. why, when set, is what the stream still holds for it.
func (s *scheduler) analyze(ctx context.Context, run, why string) (bool, error) {
	t0 := time.Now()
	scratch, err := duck.Open(ctx, "", duck.Options{Threads: s.duckCfg.Threads, MemoryLimit: s.duckCfg.MemoryLimit})
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
	if err := detectors.SetWindow(ctx, scratch, detectors.Window{}); err != nil {
		return false, err
	}
	window, err := windowSteps(ctx, scratch)
	if err != nil {
		return false, err
	}
	results, err := s.set.RunWithAudit(ctx, scratch, "")
	if err != nil {
		return false, err
	}
	for _, f := range detectors.Failures(results) {
		s.DetectorErrors.Add(1)
		s.logf("run %s: %s (the report lists it; the other detectors ran)", run, f.Error)
	}
	rep, err := detectors.BuildReport(ctx, scratch, results)
	if err != nil {
		return false, err
	}
	rep.Status = status
	if err := detectors.SaveCauses(ctx, scratch, rep); err != nil {
		return false, err
	}
	rr := &liveReport{Run: run, At: s.now().UTC(), Status: status, Partial: status != nil && status.Partial}
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
	if err := rep.WriteHTML(&page); err != nil {
		return false, err
	}
	rr.md, rr.json, rr.html = md.Bytes(), js.Bytes(), page.Bytes()

	took := time.Since(t0)
	var statusText any
	if status != nil {
		statusText = strings.Join(append(append([]string(nil), status.Reasons...), status.Missing...), "; ")
	}
	s.mu.Lock()
	err = s.st.Tx(ctx, func() error {
		tables := []string{"findings", "metrics", "root_causes"}
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
		return s.st.Exec(ctx, `INSERT INTO analyses (run_id, analyzed_ns, step_lo, step_hi, ranks, findings, took_ms, partial, status)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			run, rr.At.UnixNano(), lo, hi, ranks, rr.Findings, float64(took.Microseconds())/1e3, rr.Partial, statusText)
	})
	s.mu.Unlock()
	if err != nil {
		return false, fmt.Errorf("store findings: %w", err)
	}
	if err := s.save(rr); err != nil {
		return false, err
	}
	s.state.Lock()
	s.reports[run] = rr
	s.state.Unlock()
	s.Passes.Add(1)
	s.LastNS.Store(int64(took))
	if s.observePass != nil {
		s.observePass(took)
	}
	kind := "analyzed"
	if rr.Partial {
		kind = "analyzed (partial: " + strings.Join(status.Reasons, "; ") + ")"
	}
	s.logf("%s run %s: %d findings in %s", kind, run, rr.Findings, took.Round(time.Millisecond))
	return rr.Partial, nil
}

// runStatus is the status of the run copied into scratch: partial while
// something is on its way (why), or while a rank has rows but no ranks row
// (a trace's ranks row is published last, after all its batches); missing
// lists rejected batches. Nil when the data is all in.
func runStatus(ctx context.Context, scratch *duck.Store, why string, missing []string) (*detectors.RunStatus, error) {
	var st detectors.RunStatus
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
		st.Reasons = append(st.Reasons, fmt.Sprintf("rank(s) %s have rows but their traces are not complete yet (no ranks row)", detectors.RankRanges(incomplete)))
	}
	st.Missing = missing
	if !st.Partial && len(st.Missing) == 0 {
		return nil, nil
	}
	return &st, nil
}

// rejectedOf describes the batches of run that were rejected.
func rejectedOf(ctx context.Context, st *duck.Store, run string) ([]string, error) {
	var n int
	var first *string
	err := st.Conn().QueryRowContext(ctx, "SELECT count(*), arg_min(reason, rejected_ns) FROM rejected_batches WHERE run_token = ?",
		stream.RunToken(run)).Scan(&n, &first)
	if err != nil || n == 0 {
		return nil, err
	}
	reason := ""
	if first != nil {
		reason = *first
		if len(reason) > 160 {
			reason = reason[:160] + "..."
		}
	}
	return []string{fmt.Sprintf("%d batch(es) of this run were rejected and are not in it (the first: %s; see rejected_batches)", n, reason)}, nil
}

// save writes the report under data_dir/reports, replacing the last one
// only once the new one is complete.
func (s *scheduler) save(rr *liveReport) error {
	dir := filepath.Join(s.cfg.DataDir, "reports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := fileToken(rr.Run)
	for ext, b := range map[string][]byte{".md": rr.md, ".json": rr.json, ".html": rr.html} {
		tmp := filepath.Join(dir, "."+name+ext+".tmp")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, name+ext)); err != nil {
			return err
		}
	}
	return nil
}

// fileToken names a run's report files. A long run id (one published by
// another build, say) is cut and made unique with a hash of it, so that
// every run gets its report: a 250-byte id once met "file name too long".
func fileToken(s string) string {
	t := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 || r == ':' {
			return '_'
		}
		return r
	}, s)
	if len(t) <= 120 {
		return t
	}
	cut := 100
	for cut > 0 && !utf8.RuneStart(t[cut]) {
		cut--
	}
	sum := sha256.Sum256([]byte(s))
	return t[:cut] + "-" + hex.EncodeToString(sum[:8])
}

// report is the latest report of run, if any.
func (s *scheduler) report(run string) *liveReport {
	s.state.Lock()
	defer s.state.Unlock()
	return s.reports[run]
}

func (s *scheduler) list() []*liveReport {
	s.state.Lock()
	defer s.state.Unlock()
	out := make([]*liveReport, 0, len(s.reports))
	for _, r := range s.reports {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Run < out[j].Run })
	return out
}

func (s *scheduler) pendingRuns() int {
	s.state.Lock()
	defer s.state.Unlock()
	return len(s.pending)
}

// partialRuns counts the runs whose latest report is partial.
func (s *scheduler) partialRuns() int {
	s.state.Lock()
	defer s.state.Unlock()
	n := 0
	for _, r := range s.reports {
		if r.Partial {
			n++
		}
	}
	return n
}

// copyRun copies the rows of run in tables from src to dst through Arrow.
func copyRun(ctx context.Context, src, dst *duck.Store, run string, tables []string) error {
	for _, t := range tables {
		rdr, err := src.QueryArrow(ctx, "SELECT * FROM "+t+" WHERE run_id = ?", run)
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

// recover picks up where a previous process stopped: reports on disk are
// served again, and runs with batches newer than their last analysis are
// analyzed again.
func (s *scheduler) recover(ctx context.Context) error {
	rows, err := s.st.Query(ctx, `
		SELECT b.run_id, max(b.ingested_ns), a.analyzed_ns, a.lo, a.hi, a.findings, a.partial, a.status
		FROM ingested_batches b
		LEFT JOIN (SELECT run_id, max(analyzed_ns) AS analyzed_ns, arg_max(step_lo, analyzed_ns) AS lo,
		                  arg_max(step_hi, analyzed_ns) AS hi, arg_max(findings, analyzed_ns) AS findings,
		                  arg_max(coalesce(partial, false), analyzed_ns) AS partial, arg_max(status, analyzed_ns) AS status
		           FROM analyses GROUP BY run_id) a USING (run_id)
		WHERE b.run_id IS NOT NULL AND b.run_id <> ''
		GROUP BY ALL ORDER BY b.run_id`)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	defer rows.Close()
	now := s.now()
	s.state.Lock()
	defer s.state.Unlock()
	for rows.Next() {
		var run string
		var ingested int64
		var at *int64
		var lo, hi, findings *int
		var partial *bool
		var status *string
		if err := rows.Scan(&run, &ingested, &at, &lo, &hi, &findings, &partial, &status); err != nil {
			return fmt.Errorf("recover: %w", err)
		}
		wasPartial := partial != nil && *partial
		if at == nil || *at < ingested || wasPartial {
			s.pending[run] = &pendingRun{first: now, last: now, partial: wasPartial}
		}
		if at == nil {
			continue
		}
		dir := filepath.Join(s.cfg.DataDir, "reports")
		md, err1 := os.ReadFile(filepath.Join(dir, fileToken(run)+".md"))
		js, err2 := os.ReadFile(filepath.Join(dir, fileToken(run)+".json"))
		page, _ := os.ReadFile(filepath.Join(dir, fileToken(run)+".html"))
		if err1 == nil && err2 == nil {
			rr := &liveReport{Run: run, At: time.Unix(0, *at).UTC(), StepLo: lo, StepHi: hi,
				Findings: deref(findings), Partial: wasPartial, md: md, json: js, html: page}
			if wasPartial && status != nil {
				rr.Status = &detectors.RunStatus{Partial: true, Reasons: []string{*status}}
			}
			s.reports[run] = rr
		}
	}
	return rows.Err()
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
