package detectors

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
)

// lateAgg is what one rank of a run held up, summed over its late
// collectives, split by why it was late.
type lateAgg struct {
	rank, instances int
	host            string
	block           float64 // held-up time it caused itself
	propagated      float64 // held-up time it passed on from upstream
	byWhy, byStep   map[string]float64
	firstAt         map[string]int64   // per step: its first arrival that held the others up
	ops             map[string]float64 // host operator -> held-up time it explains
	colls           map[string]int
	compute, idle   float64
	mem, hostX      float64
	kernels, peerK  float64
	sync, peerSync  float64
	stack           *int64
}

func (r *Report) lateCauses(run string, lates []lateInstance, sw stepWindow, waiters map[waitKey][]Waiter) []Cause {
	aggs := map[int]*lateAgg{}
	steps := map[int]bool{}
	for _, l := range lates {
		if l.run != run {
			continue
		}
		steps[l.step] = true
		a := aggs[l.rank]
		if a == nil {
			a = &lateAgg{rank: l.rank, host: l.host, byWhy: map[string]float64{}, byStep: map[string]float64{},
				ops: map[string]float64{}, colls: map[string]int{}}
			aggs[l.rank] = a
		}
		why := l.why()
		if why == "propagated" {
			a.propagated += l.block
			continue
		}
		a.instances++
		a.block += l.block
		a.byWhy[why] += l.block
		a.byStep[strconv.Itoa(l.step)] += l.block
		if a.firstAt == nil {
			a.firstAt = map[string]int64{}
		}
		if k := strconv.Itoa(l.step); a.firstAt[k] == 0 || l.at < a.firstAt[k] {
			a.firstAt[k] = l.at
		}
		a.colls[l.collective]++
		a.compute += l.compute
		a.idle += l.idle
		a.mem += max(l.mem, l.pageable)
		a.kernels += l.kernels
		a.peerK += l.peerKernels
		a.sync += l.sync
		a.peerSync += l.peerSync
		if l.hostOp != "" {
			a.ops[l.hostOp] += l.block
			a.hostX += l.hostX
			if a.stack == nil || l.hostOp == topKey(a.ops) {
				a.stack = l.hostStack
			}
		}
	}
	nSteps := float64(max(sw.steps, len(steps), 1))
	stepList := slices.Sorted(maps.Keys(steps))
	// A rank's cost is what it holds up in a typical step from the step it
	// started on (the median over those steps: one hiccup does not make a
	// rank slow, and a fault that starts mid-window is not averaged away).
	// It is a root cause when that cost stands out from the others' (robust
	// z-score over every rank, the ones that held nothing up counting as
	// zero): every collective has a last rank, and noise spreads small
	// costs over all of them. A stall of one_off_ns or more at one step that
	// holds most of a rank's cost is a one-off stall.
	costs := map[int]float64{}
	from := map[int]int{}
	for rank, a := range aggs {
		costs[rank], from[rank] = typicalCost(a, stepList)
	}
	all := slices.Collect(maps.Values(costs))
	for len(all) < r.rankCount(run) {
		all = append(all, 0)
	}
	med, mad := medianMAD(all)
	floor := 0.005 * sw.medianNS
	// with two or three ranks a z-score means nothing: there a rank must
	// hold the others up at least twice as long as any other does
	second := 0.0
	if sorted := slices.Sorted(slices.Values(all)); len(sorted) >= 2 {
		second = sorted[len(sorted)-2]
	}
	standsOut := func(perStep float64) bool {
		if len(all) <= 3 {
			return perStep >= 2*second
		}
		return (perStep-med)/max(1.4826*mad, floor, 1) >= r.causes.MinCostZ
	}
	var out []Cause
	for _, rank := range slices.Sorted(maps.Keys(aggs)) {
		a := aggs[rank]
		worstStep := topKey(a.byStep)
		worst := a.byStep[worstStep]
		c := Cause{RunID: run, Kind: "late_rank", Rank: ptr(rank), Host: a.host, Why: topKey(a.byWhy),
			Waiters: waiters[waitKey{run, rank}]}
		switch perStep := costs[rank]; {
		case worst >= r.causes.OneOffNS && worst >= r.causes.OneOffShare*a.block && nSteps >= 2:
			st, _ := strconv.Atoi(worstStep)
			c.Kind, c.Step, c.CostNS, c.StallNS = "one_off_stall", ptr(st), worst/nSteps, worst
		case perStep >= r.causes.MinCostNS && 100*perStep/max(sw.medianNS, 1) >= r.causes.MinCostPct && standsOut(perStep):
			c.CostNS = perStep
			if from[rank] > 0 && len(stepList) > 0 && from[rank] > stepList[0] {
				c.Step = ptr(from[rank]) // from this step on
			}
		default:
			continue
		}
		c.CostPct = 100 * c.CostNS / max(sw.medianNS, 1)
		c.AtNS = a.firstAt[worstStep]
		if c.Kind != "one_off_stall" {
			for _, s := range stepList {
				if at, ok := a.firstAt[strconv.Itoa(s)]; ok {
					c.AtNS = at
					break
				}
			}
		}
		brief := ""
		if f := r.findingOn(run, "gpu_throttle", rank); f != nil && c.Why == "compute" {
			// its GPU's counters say why its kernels are slow
			c.Why, brief = "throttle", counterBrief(f)
		}
		c.Fix = whyFix[c.Why]
		c.Headline, c.Evidence = lateText(c, a, nSteps, sw, brief)
		out = append(out, c)
	}
	if r.costs == nil {
		r.costs = map[string]map[int]float64{}
	}
	r.costs[run] = costs
	if r.whys == nil {
		r.whys = map[string]map[int]string{}
	}
	r.whys[run] = map[int]string{}
	for rank, a := range aggs {
		r.whys[run][rank] = topKey(a.byWhy)
	}
	return out
}

// typicalCost is a rank's median held-up time per step over the steps from
// the first where it held up a quarter of its worst step on, and that step.
func typicalCost(a *lateAgg, steps []int) (float64, int) {
	worst := a.byStep[topKey(a.byStep)]
	var per []float64
	first := 0
	for _, s := range steps {
		b := a.byStep[strconv.Itoa(s)]
		if len(per) == 0 && b < 0.25*worst {
			continue
		}
		if len(per) == 0 {
			first = s
		}
		per = append(per, b)
	}
	// an onset in the window's second-last step shows in two steps; it is
	// one when the last step is held up too (a hiccup is over by then)
	lateOnset := len(per) == 2 && per[1] >= 0.25*worst
	if len(per) < 3 && len(steps) >= 3 && !lateOnset {
		// too few steps to tell an onset from a hiccup near the end
		per, first = per[:0], 0
		for _, s := range steps {
			per = append(per, a.byStep[strconv.Itoa(s)])
		}
	}
	med, _ := medianMAD(per)
	return med, first
}

// rankCount is how many ranks a run has.
func (r *Report) rankCount(run string) int {
	for _, ri := range r.Runs {
		if ri.RunID == run {
			return len(ri.Ranks)
		}
	}
	return 0
}

// medianMAD is the median of xs and their median absolute deviation.
func medianMAD(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := slices.Sorted(slices.Values(xs))
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	dev := make([]float64, len(s))
	for i, x := range s {
		dev[i] = math.Abs(x - med)
	}
	slices.Sort(dev)
	mad := dev[len(dev)/2]
	if len(dev)%2 == 0 {
		mad = (dev[len(dev)/2-1] + dev[len(dev)/2]) / 2
	}
	return med, mad
}

// lateText is the headline and evidence chain of a late-rank cause.
func lateText(c Cause, a *lateAgg, nSteps float64, sw stepWindow, counters string) (string, []string) {
	// a one-off stall is told in its own step's numbers, the rest per step
	div, per := nSteps, " a step"
	if c.Kind == "one_off_stall" {
		div, per = 1, ""
	}
	detail := ""
	switch c.Why {
	case "data_loader", "host", "gc", "checkpoint":
		if op := topKey(a.ops); op != "" {
			detail = fmt.Sprintf(" (`%s` runs %s%s longer than on its peers, with the GPU idle)", op, mdfmt.Duration(a.hostX/div), per)
		}
	case "compute":
		detail = fmt.Sprintf(" (its kernels take %s%s longer than its peers')", mdfmt.Duration(a.compute/div), per)
	case "throttle":
		detail = fmt.Sprintf(" (%s), and its kernels take %s%s longer than its peers'", counters, mdfmt.Duration(a.compute/div), per)
	case "sync":
		detail = fmt.Sprintf(" (%.0f synchronizing calls%s where its peers make %.0f)", a.sync/div, per, a.peerSync/div)
	case "launch":
		detail = fmt.Sprintf(" (%.0f kernels%s against its peers' %.0f)", a.kernels/div, per, a.peerK/div)
	case "copies":
		detail = fmt.Sprintf(" (its copies take %s%s longer)", mdfmt.Duration(a.mem/div), per)
	}
	wait := ""
	if len(c.Waiters) > 0 {
		var ws []string
		for _, w := range c.Waiters[:min(2, len(c.Waiters))] {
			ws = append(ws, fmt.Sprintf("rank %d %s", w.Rank, mdfmt.Duration(w.WaitNS/div)))
		}
		wait = "; peers waiting longest: " + strings.Join(ws, ", ") + per
	}
	var head string
	if c.Kind == "one_off_stall" {
		stall := a.byStep[strconv.Itoa(*c.Step)]
		share := fmt.Sprintf("%.1f%% of the median step", 100*stall/max(sw.medianNS, 1))
		if stall > sw.medianNS && sw.medianNS > 0 {
			share = fmt.Sprintf("%.1f times the median step", stall/sw.medianNS)
		}
		head = fmt.Sprintf("rank %d stalled for %s in step %d (%s), holding up %d collective(s): %s%s%s",
			*c.Rank, mdfmt.Duration(stall), *c.Step, share, a.instances, whyText[c.Why], detail, wait)
	} else {
		when := "every step"
		if c.Step != nil {
			when = fmt.Sprintf("every step from step %d on", *c.Step)
		}
		head = fmt.Sprintf("rank %d delays %s by %s (%.1f%%): it reaches %d collective(s) last and holds the others up, because %s%s%s",
			*c.Rank, when, mdfmt.Duration(c.CostNS), c.CostPct, a.instances, whyText[c.Why], detail, wait)
	}
	ev := []string{
		fmt.Sprintf("critical path: held up %d collective(s) (%s) for %s in all over %.0f step(s)",
			a.instances, countList(a.colls), mdfmt.Duration(a.block), nSteps),
		fmt.Sprintf("its stretch before them against its peers': compute %s, GPU idle %s, copies %s",
			mdfmt.Signed(a.compute), mdfmt.Signed(a.idle), mdfmt.Signed(a.mem)),
	}
	if op := topKey(a.ops); op != "" && a.hostX > 0 {
		ev = append(ev, fmt.Sprintf("host: `%s` exposed %s more than its peers'", op, mdfmt.Duration(a.hostX)))
	}
	if a.propagated > 0 {
		ev = append(ev, fmt.Sprintf("it also passed on %s of lateness it received from earlier collectives", mdfmt.Duration(a.propagated)))
	}
	return head, ev
}

// findingCauses are the causes that findings name outright, each costed
// by the model its detector's cause header names: a hang, a slow link, a
// link off NVLink, a slow kernel, memory-bound work (a slow host is
// mergeSlowHost's).
func (r *Report) findingCauses(run string, sw stepWindow) []Cause {
	nSteps := float64(max(sw.steps, 1))
	var out []Cause
	for _, f := range r.Findings {
		if f.RunID != run {
			continue
		}
		ev := evidenceMap(f.Evidence)
		switch r.detector(f.Detector).causeModel() {
		case causeHang:
			if f.Rank == nil {
				continue
			}
			wait := ev["peers_wait_ns"]
			out = append(out, Cause{RunID: run, Kind: causeHang, Rank: ptr(int(*f.Rank)), Host: f.Host,
				CostNS: max(wait, 1e12), CostPct: 100, Fix: f.Fix,
				Headline: fmt.Sprintf("rank %d hung: %s; everything its peers did after that is waiting for it", *f.Rank, f.Message),
				Evidence: []string{f.Message}})
		case causeSlowLink:
			bw, med, xfer := ev["busbw_gbps"], ev["median_gbps"], ev["transfer_ns"]
			extra := 0.0
			if med > 0 && bw > 0 {
				extra = xfer * (1 - bw/med) / nSteps
			}
			out = append(out, Cause{RunID: run, Kind: causeSlowLink, Ranks: ranksOf(f.Subject), CostNS: extra,
				CostPct: 100 * extra / max(sw.medianNS, 1), Fix: f.Fix,
				Headline: fmt.Sprintf("a slow link under %s costs %s a step (%.1f%%): %s", f.Subject, mdfmt.Duration(extra), 100*extra/max(sw.medianNS, 1), f.Message),
				Evidence: []string{f.Message}})
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
			out = append(out, Cause{RunID: run, Kind: "slow_kernel", Rank: rank, CostNS: cost,
				CostPct: 100 * cost / max(sw.medianNS, 1), Fix: fix, finding: f.ID,
				Headline: fmt.Sprintf("the kernels of %s run at %.0f%% of their roofline: at the roofline each step would be up to %s shorter (%.1f%%)",
					f.Subject, roof, mdfmt.Duration(cost), 100*cost/max(sw.medianNS, 1)),
				Evidence: []string{f.Message}})
		case "memory_bound":
			// memory-bound element-wise work: what it would save moving its
			// bytes at the GPU's bandwidth (fusion saves more: it moves
			// fewer), per rank and step
			gpuNS, bytes, peak := ev["gpu_ns"], ev["gbytes"]*1e9, ev["peak_tbs"]*1e12
			if gpuNS <= 0 || peak <= 0 {
				continue
			}
			ranks := float64(max(r.rankCount(run), 1))
			atRoof := 1e9 * bytes / peak
			cost := (gpuNS - atRoof) / ranks / nSteps
			out = append(out, Cause{RunID: run, Kind: "memory_bound", CostNS: cost, CostPct: 100 * cost / max(sw.medianNS, 1), Fix: f.Fix, finding: f.ID,
				Subject: "element-wise, norm, softmax and reduction kernels",
				Headline: fmt.Sprintf("memory-bound element-wise work (%.0f calls, %.0f shapes) takes %s a step (%.1f%% of the GPU time) at %.2f TB/s, %.0f%% of the %s's %.2f TB/s: at that bandwidth it would take %s, %s a step less (%.1f%%), and fused (torch.compile) it would move its tensors once",
					ev["calls"]/ranks/nSteps, ev["shapes"], mdfmt.Duration(gpuNS/ranks/nSteps), 100*f.valueOr(0), ev["achieved_tbs"], 100*ev["achieved_tbs"]/ev["peak_tbs"],
					evidenceString(f.Evidence, "gpu"), ev["peak_tbs"], mdfmt.Duration(atRoof/ranks/nSteps), mdfmt.Duration(cost), 100*cost/max(sw.medianNS, 1)),
				Evidence: []string{f.Message}})
		case "pcie_path":
			// what NVLink would save is unknown from the counters alone:
			// the cost is the transfer time the PCIe path slows, an upper bound
			xfer := ev["transfer_share"] * sw.medianNS
			var ranks []int
			if m, ok := f.Evidence.(map[string]any); ok {
				ranks = ranksOf(fmt.Sprint(m["ranks"]))
			}
			out = append(out, Cause{RunID: run, Kind: causeSlowLink, Why: "pcie_path", Host: f.Host, Ranks: ranks, CostNS: xfer,
				CostPct: 100 * xfer / max(sw.medianNS, 1), Fix: f.Fix,
				Headline: fmt.Sprintf("collectives on %s bypass NVLink: up to %s a step (%.1f%%) of transfer at PCIe bandwidth (NVLink %.2f GB/s of its %.0f GB/s, PCIe %.1f GB/s)",
					f.Host, mdfmt.Duration(xfer), 100*xfer/max(sw.medianNS, 1), ev["nvlink_gbs"], ev["link_peak_gbs"], ev["pcie_gbs"]),
				Evidence: []string{"counters: " + f.Message}})
		}
	}
	return out
}

// mergeSlowHost turns the late ranks of a host that a finding of a
// detector with cause slow_host names into one cause: the host, not each
// of its GPUs.
func mergeSlowHost(r *Report, run string, causes []Cause, sw stepWindow) []Cause {
	for _, f := range r.Findings {
		if f.RunID != run || r.detector(f.Detector).causeModel() != causeSlowHost {
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
		host := Cause{RunID: run, Kind: causeSlowHost, Host: f.Host, Ranks: members, Why: "compute", Fix: f.Fix}
		// what all its ranks held the others up, whether or not one of them
		// stood out alone: they share the blame between them
		for _, m := range members {
			host.CostNS += r.costs[run][m]
		}
		host.CostPct = 100 * host.CostNS / max(sw.medianNS, 1)
		var kept []Cause
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
func (r *Report) linkFindings(run string, causes []Cause, waiters map[waitKey][]Waiter) {
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
		for fi := range r.Findings {
			f := &r.Findings[fi]
			if f.RunID != run || f.Category == "summary" {
				continue
			}
			rank := -1
			if f.Rank != nil {
				rank = int(*f.Rank)
			}
			d := r.detector(f.Detector)
			isShow := false
			switch c.Kind {
			case causeHang:
				isShow = own[rank] && d.shows(causeHang)
			case causeSlowLink:
				// a slow group anywhere in the run; a link off NVLink on its host
				isShow = c.Why == "" && d.shows(causeSlowLink) || c.Why != "" && f.Host == c.Host && d.shows(c.Why)
			case "slow_kernel", "memory_bound":
				isShow = f.ID == c.finding
			case "precision":
				isShow = own[rank] && d.shows(c.Why) && strings.Contains(f.Message, "FP32")
			case causeSlowHost:
				isShow = d.causeModel() == causeSlowHost || own[rank] && d.shows(causeSlowHost)
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
			case causeHang:
				explained = !own[rank]
			case causeSlowLink:
				explained = own[rank] && d.symptom() == "transfer"
			case "slow_kernel", "memory_bound", "precision":
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
func (f Finding) valueOr(def float64) float64 {
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
