package live

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/stream"
)

// save writes the report under data_dir/reports, replacing the last one
// only once the new one is complete.
func (s *Scheduler) save(rr *Report) error {
	if err := os.MkdirAll(s.reportsDir(), 0o755); err != nil {
		return err
	}
	for ext, b := range map[string][]byte{".md": rr.MD, ".json": rr.JSON, ".html": rr.HTML} {
		path := s.reportPath(rr.Run, ext)
		tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}

func (s *Scheduler) reportsDir() string { return filepath.Join(s.cfg.DataDir, "reports") }

// reportPath is where run's report in the form ext (".md", ".json",
// ".html") is kept.
func (s *Scheduler) reportPath(run, ext string) string {
	return filepath.Join(s.reportsDir(), FileToken(run)+ext)
}

// FileToken names a run's report files: stream.RunPathToken, which no
// two runs share (x/y is x%2Fy, x_y stays x_y) and which a long run id (one
// published by another build, say) gets cut and made unique with a hash
// of, so that every run gets its report: a 250-byte id once met "file name
// too long".
func FileToken(s string) string { return stream.RunPathToken(s) }

// legacyFileToken is the name a build before FileToken was injective gave
// run's report files: x/y and x_y shared one.
func legacyFileToken(s string) string {
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

// kept reads run's report files: those FileToken names, else those an
// earlier build named (legacyFileToken), which it moves to their new
// names. Files whose JSON is another run's report are not run's: before
// names were injective, x_y's report replaced x/y's.
func (s *Scheduler) kept(run string) (md, js, page []byte, ok bool) {
	read := func(name string) bool {
		dir := s.reportsDir()
		var err1, err2 error
		md, err1 = os.ReadFile(filepath.Join(dir, name+".md"))
		js, err2 = os.ReadFile(filepath.Join(dir, name+".json"))
		page, _ = os.ReadFile(filepath.Join(dir, name+".html"))
		return err1 == nil && err2 == nil && reportOf(js, run)
	}
	if read(FileToken(run)) {
		return md, js, page, true
	}
	old := legacyFileToken(run)
	if old == FileToken(run) || !read(old) {
		return nil, nil, nil, false
	}
	if s.save(&Report{Run: run, MD: md, JSON: js, HTML: page}) == nil {
		for _, ext := range []string{".md", ".json", ".html"} {
			os.Remove(filepath.Join(s.reportsDir(), old+ext))
		}
	}
	return md, js, page, true
}

// reportOf says whether js, a report's JSON, may be run's: false only
// when it names its runs and run is not one of them.
func reportOf(js []byte, run string) bool {
	var rep struct {
		Runs []struct {
			RunID string `json:"run_id"`
		} `json:"runs"`
	}
	if json.Unmarshal(js, &rep) != nil || len(rep.Runs) == 0 {
		return true
	}
	for _, r := range rep.Runs {
		if r.RunID == run {
			return true
		}
	}
	return false
}

// Recover picks up where a previous process stopped: reports on disk are
// served again, and runs with batches newer than their last analysis are
// analyzed again.
func (s *Scheduler) Recover(ctx context.Context) error {
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
	now := s.opts.Now()
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
		if md, js, page, ok := s.kept(run); ok {
			rr := &Report{Run: run, At: time.Unix(0, *at).UTC(), StepLo: lo, StepHi: hi,
				Findings: deref(findings), Partial: wasPartial, MD: md, JSON: js, HTML: page}
			if wasPartial && status != nil {
				rr.Status = &report.RunStatus{Partial: true, Reasons: []string{*status}}
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
