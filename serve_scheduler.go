package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/sql/duck"
)

// scheduler runs the detectors over a run once its data has landed: when
// the run has received nothing for cfg.Quiet (every rank's batches of a
// trace are in), or cfg.Timeout after its first unanalyzed batch for a run
// that never pauses. The window is analyze's default (every step but the
// last of each rank, which the profiler often cuts short), so that a run
// served live and the same traces analyzed offline give the same report.
// Findings and metrics of the run are replaced, the pass is logged in
// analyses, and the report is kept for /runs/<id>/report.
//
// Each pass copies the run into a scratch in-memory database and analyzes
// it there, so that detectors (which work on everything in a database) see
// that run only, and ingestion waits only for the copy.
type scheduler struct {
	st      *duck.Store
	mu      *sync.Mutex // the store's writer lock, shared with the consumer
	set     *detectors.Set
	cfg     ServeConfig
	duckCfg DuckDBConfig
	logf    func(string, ...any)

	state   sync.Mutex
	pending map[string]*pendingRun
	reports map[string]*liveReport

	Passes, Failures atomic.Int64
	DetectorErrors   atomic.Int64 // detectors that failed within a pass that went on
	LastNS           atomic.Int64 // duration of the last pass
}

type pendingRun struct {
	first, last time.Time
}

// liveReport is the latest analysis of a run.
type liveReport struct {
	Run      string    `json:"run_id"`
	At       time.Time `json:"analyzed_at"`
	StepLo   *int      `json:"step_lo,omitempty"`
	StepHi   *int      `json:"step_hi,omitempty"`
	Findings int       `json:"findings"`
	md, json []byte
}

func newScheduler(st *duck.Store, mu *sync.Mutex, set *detectors.Set, cfg ServeConfig, dcfg DuckDBConfig, logf func(string, ...any)) *scheduler {
	return &scheduler{st: st, mu: mu, set: set, cfg: cfg, duckCfg: dcfg, logf: logf,
		pending: map[string]*pendingRun{}, reports: map[string]*liveReport{}}
}

// touched is the consumer's OnCommit: these runs got new rows.
func (s *scheduler) touched(runs map[string]bool) {
	now := time.Now()
	s.state.Lock()
	defer s.state.Unlock()
	for run := range runs {
		p := s.pending[run]
		if p == nil {
			p = &pendingRun{first: now}
			s.pending[run] = p
		}
		p.last = now
	}
}

// run checks for due runs until ctx is done.
func (s *scheduler) run(ctx context.Context) {
	tick := time.NewTicker(max(s.cfg.Quiet/4, 50*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, run := range s.due(time.Now()) {
			if err := s.analyze(ctx, run); err != nil {
				if ctx.Err() != nil {
					return // shutting down: the next start analyzes it again
				}
				s.Failures.Add(1)
				s.logf("analyze run %s: %v", run, err)
			}
		}
	}
}

func (s *scheduler) due(now time.Time) []string {
	s.state.Lock()
	defer s.state.Unlock()
	var out []string
	for run, p := range s.pending {
		if now.Sub(p.last) >= s.cfg.Quiet || now.Sub(p.first) >= s.cfg.Timeout {
			out = append(out, run)
			delete(s.pending, run)
		}
	}
	sort.Strings(out)
	return out
}

func (s *scheduler) analyze(ctx context.Context, run string) error {
	t0 := time.Now()
	scratch, err := duck.Open(ctx, "", duck.Options{Threads: s.duckCfg.Threads, MemoryLimit: s.duckCfg.MemoryLimit})
	if err != nil {
		return err
	}
	defer scratch.Close()
	s.mu.Lock()
	err = copyRun(ctx, s.st, scratch, run, duck.RunTables)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	// the window analyze uses: every step but the last (often cut short)
	if err := detectors.SetWindow(ctx, scratch, detectors.Window{}); err != nil {
		return err
	}
	window, err := windowSteps(ctx, scratch)
	if err != nil {
		return err
	}
	results, err := s.set.RunWithAudit(ctx, scratch, "")
	if err != nil {
		return err
	}
	for _, f := range detectors.Failures(results) {
		s.DetectorErrors.Add(1)
		s.logf("run %s: %s (the report lists it; the other detectors ran)", run, f.Error)
	}
	rep, err := detectors.BuildReport(ctx, scratch, results)
	if err != nil {
		return err
	}
	rr := &liveReport{Run: run, At: time.Now().UTC()}
	if window.Set {
		rr.StepLo, rr.StepHi = &window.StepLo, &window.StepHi
	}
	rr.Findings = len(rep.Findings)
	var md, js bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		return err
	}
	if err := rep.WriteJSON(&js); err != nil {
		return err
	}
	rr.md, rr.json = md.Bytes(), js.Bytes()

	took := time.Since(t0)
	s.mu.Lock()
	err = s.st.Tx(ctx, func() error {
		for _, t := range []string{"findings", "metrics"} {
			if err := s.st.Exec(ctx, "DELETE FROM "+t+" WHERE run_id = ?", run); err != nil {
				return err
			}
		}
		if err := copyRun(ctx, scratch, s.st, run, []string{"findings", "metrics"}); err != nil {
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
		return s.st.Exec(ctx, "INSERT INTO analyses VALUES (?, ?, ?, ?, ?, ?, ?)",
			run, rr.At.UnixNano(), lo, hi, ranks, rr.Findings, float64(took.Microseconds())/1e3)
	})
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("store findings: %w", err)
	}
	if err := s.save(rr); err != nil {
		return err
	}
	s.state.Lock()
	s.reports[run] = rr
	s.state.Unlock()
	s.Passes.Add(1)
	s.LastNS.Store(int64(took))
	s.logf("analyzed run %s: %d findings in %s", run, rr.Findings, took.Round(time.Millisecond))
	return nil
}

// save writes the report under data_dir/reports, replacing the last one
// only once the new one is complete.
func (s *scheduler) save(rr *liveReport) error {
	dir := filepath.Join(s.cfg.DataDir, "reports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := fileToken(rr.Run)
	for ext, b := range map[string][]byte{".md": rr.md, ".json": rr.json} {
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

func fileToken(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 || r == ':' {
			return '_'
		}
		return r
	}, s)
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
		SELECT b.run_id, max(b.ingested_ns), a.at, a.lo, a.hi, a.findings
		FROM ingested_batches b
		LEFT JOIN (SELECT run_id, arg_max(analyzed_ns, analyzed_ns) AS at, arg_max(step_lo, analyzed_ns) AS lo,
		                  arg_max(step_hi, analyzed_ns) AS hi, arg_max(findings, analyzed_ns) AS findings
		           FROM analyses GROUP BY run_id) a USING (run_id)
		WHERE b.run_id IS NOT NULL AND b.run_id <> ''
		GROUP BY b.run_id, a.at, a.lo, a.hi, a.findings ORDER BY b.run_id`)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	defer rows.Close()
	now := time.Now()
	s.state.Lock()
	defer s.state.Unlock()
	for rows.Next() {
		var run string
		var ingested int64
		var at *int64
		var lo, hi, findings *int
		if err := rows.Scan(&run, &ingested, &at, &lo, &hi, &findings); err != nil {
			return fmt.Errorf("recover: %w", err)
		}
		if at == nil || *at < ingested {
			s.pending[run] = &pendingRun{first: now, last: now}
		}
		if at == nil {
			continue
		}
		dir := filepath.Join(s.cfg.DataDir, "reports")
		md, err1 := os.ReadFile(filepath.Join(dir, fileToken(run)+".md"))
		js, err2 := os.ReadFile(filepath.Join(dir, fileToken(run)+".json"))
		if err1 == nil && err2 == nil {
			s.reports[run] = &liveReport{Run: run, At: time.Unix(0, *at).UTC(), StepLo: lo, StepHi: hi,
				Findings: deref(findings), md: md, json: js}
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
