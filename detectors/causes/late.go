package causes

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/detectors/report"
)

// rootCause is a root cause as Judge builds it: the report's cause and what
// the judging needs to know of it besides.
type rootCause struct {
	report.Cause
	finding string // the finding a slow_kernel cause comes from
	// from the account: the subject's key and stack id, what grew in a
	// stall, and a precision cause's ms a step in FP32, at TF32, at bf16
	subjectKey string
	stack      int32
	grew       float64
	precision  [3]float64
	share      float64
	peerMedian float64 // a rank outlier's peers' median, ns a step
	// profiler: ns a step of a host-side cause taken off it as the
	// profiler's own recording cost (profilerCost)
	profiler     float64
	profilerStep float64 // the traced step it was measured against
	// unsure: a host-side cause that would not cost enough had the
	// profiler cost the most per event it has been measured to
	// (profilerEventHighNS): all of it may be the profiler's, so it comes
	// after the causes that are not
	unsure bool
	// rankOutlier: one rank of several losing more than its peers to it
	rankOutlier bool
	// gaps: idle the trace cannot explain, in short stretches (between
	// sparse events, not host work of its own): it never heads the verdict
	gaps bool
	// firstStep: a one-off stall in its rank's first recorded step, which
	// also pays for the profiler starting its recording (on an H100 such
	// a step took 185-273 ms more than the others traced, and no longer
	// than them untraced: bench/gpu); it comes after every other cause, so
	// it heads the verdict only when nothing else costs enough
	firstStep bool
}

// heads says whether a cause may head the verdict.
func (c rootCause) heads() bool { return !(c.Kind == "unrecorded_idle" && c.gaps) }

// last says whether a cause comes after every other of its run: idle the
// trace cannot explain, and a stall in the first recorded step.
func (c rootCause) last() bool { return c.Kind == "unrecorded_idle" || c.firstStep }

// Late is one collective instance a rank held up, and what that rank did
// before it compared with its peers (a row of the late_arrivals view):
// ns it held the others up (Block), its stretch since its last collective
// and its peers' (Seg, PeerSeg), the excess over its peers' of its
// compute, copies, idle, pageable copies and exposed host operator time,
// its kernels and synchronizing calls against its peers', and its arrival
// on its own clock (At).
type Late struct {
	Run, Comm, Collective, Host, HostOp string
	Step, Seq, Rank                     int
	HostStack                           *int64
	Block, Seg, PeerSeg                 float64
	Compute, Mem, Idle, Pageable, HostX float64
	Kernels, PeerKernels                float64
	Sync, PeerSync                      float64
	At                                  int64
}

// Why a late rank was late, from its stretch before the collective against
// its peers': the part of its lateness each component explains.
var (
	loaderRE     = regexp.MustCompile(`(?i)dataloader|data_loader|__next__|enumerate\(|_next_data|prefetch|collate|get_batch`)
	gcRE         = regexp.MustCompile(`(?i)(^|[^a-z])gc([^a-z]|$)|garbage|gc\.collect`)
	checkpointRE = regexp.MustCompile(`(?i)checkpoint|torch\.save|save_state|state_dict|serialization`)
)

func (l Late) why() string {
	lateness := l.Block
	switch {
	case l.Seg-l.PeerSeg < 0.3*lateness:
		// it spent no longer than its peers since its last collective: it
		// was late because that one ended late (its lateness came from
		// upstream), not because of anything it did
		return "propagated"
	case l.Pageable >= 0.5*lateness || l.Mem >= 0.5*lateness:
		return "copies"
	case l.Kernels >= 1.5*l.PeerKernels+20 && (l.Compute+l.Idle) >= 0.5*lateness:
		// many more kernels than its peers ran in the same stretch: the
		// cost is their launches (and their own short runs), not slower
		// kernels
		return "launch"
	case l.Compute >= 0.5*lateness:
		return "compute"
	case l.HostX >= 0.3*lateness && loaderRE.MatchString(l.HostOp):
		return "data_loader"
	case l.Idle >= 0.3*lateness && l.Sync > l.PeerSync:
		return "sync"
	case l.HostX >= 0.3*lateness && checkpointRE.MatchString(l.HostOp):
		return "checkpoint"
	case l.HostX >= 0.3*lateness && gcRE.MatchString(l.HostOp):
		return "gc"
	case l.Idle >= 0.5*lateness:
		return "host"
	}
	return "unknown"
}

// whyText says a cause in words, for the headline.
var whyText = map[string]string{
	"data_loader": "its data loading stalls",
	"compute":     "its kernels run slower than its peers'",
	"sync":        "it synchronizes with the GPU where its peers do not",
	"launch":      "it launches many more small kernels than its peers, and the GPU waits for the launches",
	"copies":      "its host-device copies take longer (pageable memory)",
	"gc":          "Python garbage collection stalls it",
	"checkpoint":  "checkpointing stalls it",
	"host":        "its host is busy while its GPU idles",
	"throttle":    "its GPU throttles",
	"unknown":     "of something its trace does not show (its stretch before the collectives is longer, but neither its kernels nor its host account for it)",
}

// whyFix is the one fix for each kind of lateness.
var whyFix = map[string]string{
	"data_loader": "make the input pipeline keep ahead of the GPU on this rank: more DataLoader workers, persistent_workers=True, prefetch_factor, pin_memory; check this rank's shard (larger samples) and the storage it reads from",
	"compute":     "find why this GPU is slower than its peers: clocks, power cap and temperature (DCGM), ECC/XID errors, another process on the GPU; if it persists, drain the node",
	"throttle":    "cool or power the GPU back to its clocks (temperature, fans and airflow; its power limit against its peers'); if it persists, drain the node and have the GPU serviced",
	"sync":        "remove the synchronizing calls from this rank's step (.item(), .cpu(), torch.cuda.synchronize(), blocking copies): record events and read them later",
	"launch":      "launch fewer, larger kernels on this rank: fuse with torch.compile or capture the step with CUDA graphs; avoid per-element Python loops over tensors",
	"copies":      "pin this rank's host buffers (pin_memory=True, tensor.pin_memory()) and copy with non_blocking=True",
	"gc":          "take garbage collection off the step: gc.freeze() after setup, gc.disable() with a gc.collect() every N steps on all ranks at once",
	"checkpoint":  "checkpoint asynchronously (torch.distributed.checkpoint async_save) or on all ranks at the same step, so that peers do not wait for one",
	"host":        "look at this rank's host work in the stretch before its late collectives (the call stack named below): move it off the step's critical path or make it cheaper",
	"unknown":     "compare this rank's trace with a peer's around its late collectives; check its host's CPU load and NUMA placement",
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

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

func (j *judge) lateCauses(run string, lates []Late, sw StepWindow, waiters map[WaitKey][]report.Waiter) []rootCause {
	aggs := map[int]*lateAgg{}
	steps := map[int]bool{}
	for _, l := range lates {
		if l.Run != run {
			continue
		}
		steps[l.Step] = true
		a := aggs[l.Rank]
		if a == nil {
			a = &lateAgg{rank: l.Rank, host: l.Host, byWhy: map[string]float64{}, byStep: map[string]float64{},
				ops: map[string]float64{}, colls: map[string]int{}}
			aggs[l.Rank] = a
		}
		why := l.why()
		if why == "propagated" {
			a.propagated += l.Block
			continue
		}
		a.instances++
		a.block += l.Block
		a.byWhy[why] += l.Block
		a.byStep[strconv.Itoa(l.Step)] += l.Block
		if a.firstAt == nil {
			a.firstAt = map[string]int64{}
		}
		if k := strconv.Itoa(l.Step); a.firstAt[k] == 0 || l.At < a.firstAt[k] {
			a.firstAt[k] = l.At
		}
		a.colls[l.Collective]++
		a.compute += l.Compute
		a.idle += l.Idle
		a.mem += max(l.Mem, l.Pageable)
		a.kernels += l.Kernels
		a.peerK += l.PeerKernels
		a.sync += l.Sync
		a.peerSync += l.PeerSync
		if l.HostOp != "" {
			a.ops[l.HostOp] += l.Block
			a.hostX += l.HostX
			if a.stack == nil || l.HostOp == topKey(a.ops) {
				a.stack = l.HostStack
			}
		}
	}
	nSteps := float64(max(sw.Steps, len(steps), 1))
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
	for len(all) < j.rankCount(run) {
		all = append(all, 0)
	}
	med, mad := MedianMAD(all)
	floor := 0.005 * sw.MedianNS
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
		return (perStep-med)/max(1.4826*mad, floor, 1) >= j.cfg.MinCostZ
	}
	var out []rootCause
	for _, rank := range slices.Sorted(maps.Keys(aggs)) {
		a := aggs[rank]
		worstStep := topKey(a.byStep)
		worst := a.byStep[worstStep]
		c := rootCause{Cause: report.Cause{RunID: run, Kind: "late_rank", Rank: ptr(rank), Host: a.host, Why: topKey(a.byWhy),
			Waiters: waiters[WaitKey{run, rank}]}}
		switch perStep := costs[rank]; {
		case worst >= j.cfg.OneOffNS && worst >= j.cfg.OneOffShare*a.block && nSteps >= 2:
			st, _ := strconv.Atoi(worstStep)
			c.Kind, c.Step, c.CostNS, c.StallNS = "one_off_stall", ptr(st), worst/nSteps, worst
		case perStep >= j.cfg.MinCostNS && 100*perStep/max(sw.MedianNS, 1) >= j.cfg.MinCostPct && standsOut(perStep):
			c.CostNS = perStep
			if from[rank] > 0 && len(stepList) > 0 && from[rank] > stepList[0] {
				c.Step = ptr(from[rank]) // from this step on
			}
		default:
			continue
		}
		c.CostPct = 100 * c.CostNS / max(sw.MedianNS, 1)
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
		if fs := j.evidenceOn(run, "late_rank", rank); len(fs) > 0 && c.Why == "compute" {
			// its GPU's counters say why its kernels are slow
			if why := j.role(fs[0].Detector).lateReason(); why != "" {
				c.Why, brief = why, counterBrief(fs[0])
			}
		}
		c.Fix = whyFix[c.Why]
		c.Headline, c.Evidence = lateText(c, a, nSteps, sw, brief)
		out = append(out, c)
	}
	if j.costs == nil {
		j.costs = map[string]map[int]float64{}
	}
	j.costs[run] = costs
	if j.whys == nil {
		j.whys = map[string]map[int]string{}
	}
	j.whys[run] = map[int]string{}
	for rank, a := range aggs {
		j.whys[run][rank] = topKey(a.byWhy)
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
	med, _ := MedianMAD(per)
	return med, first
}

// rankCount is how many ranks a run has.
func (j *judge) rankCount(run string) int { return len(j.runInfo(run).Ranks) }

// runInfo is what the report knows of a run (the zero RunInfo when it
// knows nothing).
func (j *judge) runInfo(run string) report.RunInfo {
	for _, ri := range j.runs {
		if ri.RunID == run {
			return ri
		}
	}
	return report.RunInfo{}
}

// MedianMAD is the median of xs and their median absolute deviation.
func MedianMAD(xs []float64) (float64, float64) {
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
func lateText(c rootCause, a *lateAgg, nSteps float64, sw StepWindow, counters string) (string, []string) {
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
		share := fmt.Sprintf("%.1f%% of the median step", 100*stall/max(sw.MedianNS, 1))
		if stall > sw.MedianNS && sw.MedianNS > 0 {
			share = fmt.Sprintf("%.1f times the median step", stall/sw.MedianNS)
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
