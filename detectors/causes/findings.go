package causes

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/detectors/report"
)

// findingCauses are the causes that findings name outright, each costed
// by the model its detector's cause header names: a hang, a slow link, a
// link off NVLink, a slow kernel, memory-bound work (a slow host is
// attainableBW is the share of a GPU's peak memory bandwidth that a
// streaming kernel reaches: a copy or triad moves about 90% of the spec
// sheet's figure on an H100 or A100, so a memory-bound cost measured
// against the whole peak promises time that no kernel can save.
const attainableBW = 0.9

// mergeSlowHost's).
func (j *judge) findingCauses(run string, sw StepWindow) []rootCause {
	nSteps := float64(max(sw.Steps, 1))
	var out []rootCause
	for _, f := range j.findings {
		if f.RunID != run {
			continue
		}
		ev := evidenceMap(f.Evidence)
		switch j.role(f.Detector).causeModel() {
		case report.KindHang:
			if f.Rank == nil {
				continue
			}
			wait := ev["peers_wait_ns"]
			out = append(out, rootCause{Cause: report.Cause{RunID: run, Kind: report.KindHang, Rank: ptr(int(*f.Rank)), Host: f.Host,
				CostNS: max(wait, 1e12), CostPct: 100, Fix: f.Fix,
				Headline: fmt.Sprintf("rank %d hung: %s; everything its peers did after that is waiting for it", *f.Rank, f.Message),
				Evidence: []string{f.Message}}})
		case report.KindSlowLink:
			bw, med, xfer := ev["busbw_gbps"], ev["median_gbps"], ev["transfer_ns"]
			extra := 0.0
			if med > 0 && bw > 0 {
				extra = xfer * (1 - bw/med) / nSteps
			}
			out = append(out, rootCause{Cause: report.Cause{RunID: run, Kind: report.KindSlowLink, Ranks: ranksOf(f.Subject), CostNS: extra,
				CostPct: 100 * extra / max(sw.MedianNS, 1), Fix: f.Fix,
				Headline: fmt.Sprintf("a slow link under %s costs %s a step (%.1f%%): %s", f.Subject, mdfmt.Duration(extra), 100*extra/max(sw.MedianNS, 1), f.Message),
				Evidence: []string{f.Message}}})
		case "slow_kernel":
			// a kernel far below its roofline: what it would save at the
			// roofline, per rank and step, is what the step could lose (an
			// upper bound: compute that overlaps other work saves less)
			cost := ev["saved_ns"] / max(ev["ranks"], 1) / nSteps
			roof := 0.0
			if f.Value != nil {
				roof = 100 * *f.Value
			}
			var rank *int
			if f.Rank != nil {
				rank = ptr(int(*f.Rank))
			}
			fix := f.Fix
			if m, ok := f.Evidence.(map[string]any); ok {
				if a, ok := m["advice"].(string); ok && a != "" {
					fix = a
				}
			}
			out = append(out, rootCause{Cause: report.Cause{RunID: run, Kind: "slow_kernel", Rank: rank, CostNS: cost,
				CostPct: 100 * cost / max(sw.MedianNS, 1), Fix: fix,
				Headline: fmt.Sprintf("the kernels of %s run at %.0f%% of their roofline: at the roofline each step would be up to %s shorter (%.1f%%)",
					f.Subject, roof, mdfmt.Duration(cost), 100*cost/max(sw.MedianNS, 1)),
				Evidence: []string{f.Message}}, finding: f.ID})
		case "memory_bound":
			// memory-bound element-wise work: what it would save moving its
			// bytes at the bandwidth a streaming kernel reaches
			// (attainableBW of the peak; fusion saves more: it moves fewer),
			// per rank and step
			gpuNS, bytes, peak := ev["gpu_ns"], ev["gbytes"]*1e9, ev["peak_tbs"]*1e12
			if gpuNS <= 0 || peak <= 0 {
				continue
			}
			ranks := float64(max(j.rankCount(run), 1))
			atRoof := 1e9 * bytes / (attainableBW * peak)
			cost := (gpuNS - atRoof) / ranks / nSteps
			if cost <= 0 {
				continue
			}
			out = append(out, rootCause{Cause: report.Cause{RunID: run, Kind: "memory_bound", CostNS: cost, CostPct: 100 * cost / max(sw.MedianNS, 1), Fix: f.Fix,
				Subject: "element-wise, norm, softmax and reduction kernels",
				Headline: fmt.Sprintf("memory-bound element-wise work (%.0f calls, %.0f shapes) takes %s a step (%.1f%% of the GPU time) at %.2f TB/s, %.0f%% of the %s's %.2f TB/s: at %.0f%% of it (what a streaming kernel reaches) it would take %s, %s a step less (%.1f%%), and fused (torch.compile) it would move its tensors once",
					ev["calls"]/ranks/nSteps, ev["shapes"], mdfmt.Duration(gpuNS/ranks/nSteps), 100*valueOr(f, 0), ev["achieved_tbs"], 100*ev["achieved_tbs"]/ev["peak_tbs"],
					evidenceString(f.Evidence, "gpu"), ev["peak_tbs"], 100*attainableBW, mdfmt.Duration(atRoof/ranks/nSteps), mdfmt.Duration(cost), 100*cost/max(sw.MedianNS, 1)),
				Evidence: []string{f.Message}}, finding: f.ID})
		case "pcie_path":
			// what NVLink would save is unknown from the counters alone:
			// the cost is the transfer time the PCIe path slows, an upper bound
			xfer := ev["transfer_share"] * sw.MedianNS
			var ranks []int
			if m, ok := f.Evidence.(map[string]any); ok {
				ranks = ranksOf(fmt.Sprint(m["ranks"]))
			}
			out = append(out, rootCause{Cause: report.Cause{RunID: run, Kind: report.KindSlowLink, Why: "pcie_path", Host: f.Host, Ranks: ranks, CostNS: xfer,
				CostPct: 100 * xfer / max(sw.MedianNS, 1), Fix: f.Fix,
				Headline: fmt.Sprintf("collectives on %s bypass NVLink: up to %s a step (%.1f%%) of transfer at PCIe bandwidth (NVLink %.2f GB/s of its %.0f GB/s, PCIe %.1f GB/s)",
					f.Host, mdfmt.Duration(xfer), 100*xfer/max(sw.MedianNS, 1), ev["nvlink_gbs"], ev["link_peak_gbs"], ev["pcie_gbs"]),
				Evidence: []string{"counters: " + f.Message}}})
		}
	}
	return out
}

// mergeSlowHost turns the late ranks of a host that a finding of a
// detector with cause slow_host names into one cause: the host, not each
// of its GPUs.
func mergeSlowHost(j *judge, run string, causes []rootCause, sw StepWindow) []rootCause {
	for _, f := range j.findings {
		if f.RunID != run || j.role(f.Detector).causeModel() != report.KindSlowHost {
			continue
		}
		var members []int
		if ev, ok := f.Evidence.(map[string]any); ok {
			members = ranksOf(fmt.Sprint(ev["ranks"]))
		}
		in := map[int]bool{}
		for _, m := range members {
			in[m] = true
		}
		host := rootCause{Cause: report.Cause{RunID: run, Kind: report.KindSlowHost, Host: f.Host, Ranks: members, Why: "compute", Fix: f.Fix}}
		// what all its ranks held the others up, whether or not one of them
		// stood out alone: they share the blame between them
		for _, m := range members {
			host.CostNS += j.costs[run][m]
		}
		host.CostPct = 100 * host.CostNS / max(sw.MedianNS, 1)
		var kept []rootCause
		for _, c := range causes {
			if c.Rank != nil && in[*c.Rank] && (c.Kind == "late_rank" || c.Kind == "one_off_stall") {
				host.Waiters = append(host.Waiters, c.Waiters...)
				continue
			}
			kept = append(kept, c)
		}
		name := f.Host
		if name == "" {
			name = f.Subject
		}
		host.Headline = fmt.Sprintf("host %s delays every step by %s (%.1f%%): %s", name, mdfmt.Duration(host.CostNS), host.CostPct, f.Message)
		host.Evidence = []string{f.Message}
		causes = append(kept, host)
	}
	return causes
}

// linkFindings marks which findings each cause shows itself in and which
// it explains, both ways.
func (j *judge) linkFindings(run string, causes []rootCause, waiters map[WaitKey][]report.Waiter) {
	for ci := range causes {
		c := &causes[ci]
		waited := map[int]bool{}
		for _, w := range c.Waiters {
			waited[w.Rank] = true
		}
		own := map[int]bool{}
		if c.Rank != nil {
			own[*c.Rank] = true
		}
		for _, m := range c.Ranks {
			own[m] = true
		}
		for fi := range j.findings {
			f := &j.findings[fi]
			if f.RunID != run || f.Category == "summary" {
				continue
			}
			rank := -1
			if f.Rank != nil {
				rank = int(*f.Rank)
			}
			d := j.role(f.Detector)
			isShow := false
			switch c.Kind {
			case report.KindHang:
				isShow = own[rank] && d.shows(report.KindHang)
			case report.KindSlowLink:
				// a slow group anywhere in the run; a link off NVLink on its host
				isShow = c.Why == "" && d.shows(report.KindSlowLink) || c.Why != "" && f.Host == c.Host && d.shows(c.Why)
			case "slow_kernel", "memory_bound":
				isShow = f.ID == c.finding
			case kindComm:
				isShow = d.symptom() == "transfer"
			case "precision":
				isShow = own[rank] && d.shows(c.Why) && strings.Contains(f.Message, "FP32")
			case report.KindSlowHost:
				isShow = d.causeModel() == report.KindSlowHost || own[rank] && d.shows(report.KindSlowHost)
			default:
				isShow = own[rank] && (d.shows("any") || d.shows(c.Why))
			}
			if isShow {
				c.Shown = append(c.Shown, f.ID)
				f.Shows = appendNew(f.Shows, c.ID)
				continue
			}
			if d.symptom() == "" {
				continue
			}
			explained := false
			switch c.Kind {
			case report.KindHang:
				explained = !own[rank]
			case report.KindSlowLink:
				explained = own[rank] && d.symptom() == "transfer"
			case "slow_kernel", "memory_bound", "precision", kindComm:
				explained = false
			default:
				// what peers that waited for it show (not their exposed
				// communication: that is transfer, their waits are set
				// apart); and its own idle GPU when it was late for a
				// host-side reason
				explained = d.symptom() == "idle" && (waited[rank] && !own[rank] ||
					own[rank] && c.Why != "compute" && c.Why != "throttle")
			}
			if explained {
				c.Explains = append(c.Explains, f.ID)
				f.CausedBy = appendNew(f.CausedBy, c.ID)
			}
		}
	}
}

// evidenceString is a string value of a finding's evidence.
func evidenceString(ev any, key string) string {
	m, ok := ev.(map[string]any)
	if !ok {
		if s, ok := ev.(string); ok {
			json.Unmarshal([]byte(s), &m)
		}
	}
	if s, ok := m[key].(string); ok {
		return s
	}
	return ""
}

// valueOr is the finding's value, or def when it has none.
func valueOr(f report.Finding, def float64) float64 {
	if f.Value != nil {
		return *f.Value
	}
	return def
}

func evidenceMap(ev any) map[string]float64 {
	out := map[string]float64{}
	m, ok := ev.(map[string]any)
	if !ok {
		if s, ok := ev.(string); ok {
			json.Unmarshal([]byte(s), &m)
		}
	}
	for k, v := range m {
		switch x := v.(type) {
		case float64:
			out[k] = x
		case json.Number:
			out[k], _ = x.Float64()
		}
	}
	return out
}

// ranksOf reads the rank numbers of a text such as "[0, 1, 2, 3]" or
// "tp [4, 5]": every run of digits inside its last brackets, else all.
func ranksOf(s string) []int {
	if i, j := strings.LastIndex(s, "["), strings.LastIndex(s, "]"); i >= 0 && j > i {
		s = s[i+1 : j]
	}
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func topKey(m map[string]float64) string {
	best, bestV := "", -1.0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > bestV {
			best, bestV = k, m[k]
		}
	}
	return best
}

func countList(m map[string]int) string {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	var parts []string
	for _, k := range keys[:min(3, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s x%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func ptr[T any](v T) *T { return &v }
