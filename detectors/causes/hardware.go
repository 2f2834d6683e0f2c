package causes

import (
	"fmt"
	"strings"

	"github.com/trainscope/trainscope/detectors/report"
)

// hardwareCauses carries the findings that are evidence for a cause (their
// detector's evidence header) into it: a late rank whose kernels run slow
// on a throttling GPU is late because the GPU throttles (lateCauses named
// the reason; the counters' finding is its evidence and fix); a slow host
// whose GPUs are capped or throttle says so; a hung rank whose GPU
// reported an error hung on it.
func (j *judge) hardwareCauses(run string, causes []rootCause) {
	for i := range causes {
		c := &causes[i]
		switch c.Kind {
		case "late_rank", "one_off_stall":
			if fs := j.evidenceOn(run, "late_rank", rankOr(c.Rank)); len(fs) > 0 && j.role(fs[0].Detector).shows(c.Why) {
				c.Fix = fs[0].Fix
				c.Evidence = append(c.Evidence, "counters: "+fs[0].Message)
			}
		case report.KindSlowHost:
			// findings on one of its ranks, in its ranks' order, then the
			// ones without a rank whose subject names one of them
			var lines []string
			for _, m := range c.Ranks {
				for _, f := range j.evidenceOn(run, report.KindSlowHost, m) {
					lines = append(lines, "counters: "+f.Message)
				}
			}
			for i := range j.findings {
				f := &j.findings[i]
				if f.RunID == run && f.Rank == nil && j.role(f.Detector).evidenceFor(report.KindSlowHost) && overlaps(ranksOf(f.Subject), c.Ranks) {
					lines = append(lines, "counters: "+f.Message)
				}
			}
			if len(lines) > 0 {
				c.Evidence = append(c.Evidence, lines...)
				c.Headline += "; its GPUs' counters show throttling"
			}
		case report.KindHang:
			if fs := j.evidenceOn(run, report.KindHang, rankOr(c.Rank)); c.Rank != nil && len(fs) > 0 {
				f := fs[0]
				c.Headline += fmt.Sprintf("; its GPU reported an error: %s", f.Message)
				c.Evidence = append(c.Evidence, "counters: "+f.Message)
				c.Fix = f.Fix + "; " + c.Fix
			}
		}
	}
}

// evidenceOn are run's findings on rank that are evidence for a cause of
// kind (their detector's evidence header names it), in report order.
func (j *judge) evidenceOn(run, kind string, rank int) []*report.Finding {
	var out []*report.Finding
	for i := range j.findings {
		f := &j.findings[i]
		if f.RunID == run && f.Rank != nil && int(*f.Rank) == rank && j.role(f.Detector).evidenceFor(kind) {
			out = append(out, f)
		}
	}
	return out
}

// lateReason is the reason a finding that is evidence for a late rank
// shows (its first, other than compute), or "".
func (d role) lateReason() string {
	for _, w := range d.Shows {
		if _, ok := whyText[w]; ok && w != "compute" {
			return w
		}
	}
	return ""
}

// counterBrief is the counter evidence of a throttling finding in a few
// words: its clocks against the run's and its reasons.
func counterBrief(f *report.Finding) string {
	ev := evidenceMap(f.Evidence)
	var parts []string
	if ev["run_sm_clock_mhz"] > 0 {
		parts = append(parts, fmt.Sprintf("SM clock %.0f MHz against the run's %.0f MHz", ev["sm_clock_mhz"], ev["run_sm_clock_mhz"]))
	}
	if m, ok := f.Evidence.(map[string]any); ok {
		if s, _ := m["reasons"].(string); s != "" && s != "none" && ev["throttle_share"] > 0 {
			parts = append(parts, fmt.Sprintf("%s in %.0f%% of samples", s, 100*ev["throttle_share"]))
		}
	}
	return strings.Join(parts, ", ")
}

func overlaps(a, b []int) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

func rankOr(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
