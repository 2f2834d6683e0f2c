package causes

import (
	"fmt"
	"strings"

	"github.com/trainscope/trainscope/detectors/report"
)

// hardwareCauses carries what a rank's GPU counters say into the causes
// they explain: a late rank whose kernels run slow on a throttling GPU is
// late because the GPU throttles (gpu_throttle names the counter); a slow
// host whose GPUs are capped or throttle says so; a hung rank whose GPU
// reported an XID or ECC error hung on it (gpu_xid).
func (j *judge) hardwareCauses(run string, causes []rootCause) {
	byRank := map[string]map[int]*report.Finding{}
	var capped []*report.Finding
	for i := range j.findings {
		f := &j.findings[i]
		if f.RunID != run {
			continue
		}
		switch f.Detector {
		case "gpu_throttle", "gpu_xid":
			if f.Rank == nil {
				continue
			}
			if byRank[f.Detector] == nil {
				byRank[f.Detector] = map[int]*report.Finding{}
			}
			byRank[f.Detector][int(*f.Rank)] = f
		case "gpu_clock_cap":
			capped = append(capped, f)
		}
	}
	for i := range causes {
		c := &causes[i]
		switch c.Kind {
		case "late_rank", "one_off_stall":
			// lateCauses named the throttling; the counters are evidence
			if f := byRank["gpu_throttle"][rankOr(c.Rank)]; f != nil && c.Why == "throttle" {
				c.Fix = f.Fix
				c.Evidence = append(c.Evidence, "counters: "+f.Message)
			}
		case report.KindSlowHost:
			var lines []string
			for _, m := range c.Ranks {
				if f := byRank["gpu_throttle"][m]; f != nil {
					lines = append(lines, "counters: "+f.Message)
				}
			}
			for _, f := range capped {
				if overlaps(ranksOf(f.Subject), c.Ranks) {
					lines = append(lines, "counters: "+f.Message)
				}
			}
			if len(lines) > 0 {
				c.Evidence = append(c.Evidence, lines...)
				c.Headline += "; its GPUs' counters show throttling"
			}
		case report.KindHang:
			if f := byRank["gpu_xid"][rankOr(c.Rank)]; c.Rank != nil && f != nil {
				c.Headline += fmt.Sprintf("; its GPU reported an error: %s", f.Message)
				c.Evidence = append(c.Evidence, "counters: "+f.Message)
				c.Fix = f.Fix + "; " + c.Fix
			}
		}
	}
}

// findingOn is run's finding of detector on rank, or nil.
func (j *judge) findingOn(run, detector string, rank int) *report.Finding {
	for i := range j.findings {
		f := &j.findings[i]
		if f.RunID == run && f.Detector == detector && f.Rank != nil && int(*f.Rank) == rank {
			return f
		}
	}
	return nil
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
