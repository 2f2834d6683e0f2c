package causes

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/detectors/report"
)

// Causes from the step-time account: what a typical step loses to each
// kind of cause (ms a step, from every rank's steady steps), and the
// one-off stalls found among every complete step. They join the causes of
// the collectives (late ranks, slow hosts and links, hangs) and of the
// kernels (slow kernels, precision), and the costliest heads the verdict.

// accountKinds are the account's idle causes as root-cause kinds, with
// what a step loses to them and the one fix.
var accountKinds = map[string]struct{ kind, fix string }{
	"sync":       {"sync", "take the synchronizing calls off the step: no .item(), .cpu(), .tolist() or print of a tensor inside it, no torch.cuda.synchronize() outside timing code; keep values on the GPU and read them after the step (or every N steps), with non_blocking copies and events"},
	"input":      {"input_bound", "make the input pipeline keep ahead of the GPU: DataLoader(num_workers >= 4, persistent_workers=True, prefetch_factor=2-4, pin_memory=True), move per-sample work (tokenising, decoding, augmentation) into the workers or offline"},
	"host":       {"host_bound", "move the named host work off the step's critical path (a background thread or process, every N steps, or asynchronous: torch.distributed.checkpoint.async_save for checkpoints), or make it cheaper"},
	"launch":     {"launch_bound", "cut the per-kernel host cost: capture the step in CUDA graphs (torch.compile(mode=\"reduce-overhead\")), fuse small operators (torch.compile), use foreach/fused optimizers (Adam(fused=True)), and batch more work per kernel"},
	"unrecorded": {"unrecorded_idle", "see what the host does in those stretches: profile with with_stack=True (Python frames), record_function around your own steps, or py-spy; the profiler recorded no operator or call there"},
}

// shortGapNS: idle the profiler did not record, in stretches averaging
// less than this, is the Python between operators (per-operator overhead),
// counted with launch overhead.
const shortGapNS = 50e3

// longGapNS: unrecorded idle in stretches averaging this or more is host
// work of its own (Python outside operators, without with_stack), which
// may head the verdict.
const longGapNS = 1e6

// accountCauses are one run's causes from its account.
func (j *judge) accountCauses(run string, ra *runAccount, others []rootCause) []rootCause {
	if ra == nil || len(ra.ranks) == 0 {
		return nil
	}
	t := ra.typical()
	step := t.stepNS
	if step <= 0 {
		return nil
	}
	if j.breakdowns == nil {
		j.breakdowns, j.outlierLines = map[string]string{}, map[string][]string{}
	}
	j.breakdowns[run] = t.breakdown()
	if j.acctPerRank == nil {
		j.acctPerRank = map[string]map[string]map[int]float64{}
	}
	j.acctPerRank[run] = t.perRank
	j.outlierLines[run] = ra.outlierText(t)
	multi := len(ra.ranks) > 1
	var out []rootCause

	// steady causes: idle by what the launching thread did, and copies
	idle := map[string]float64{}
	subjects := map[string][]string{}
	for _, cause := range []string{"sync", "input", "host", "launch", "unrecorded"} {
		idle[cause], subjects[cause] = t.causeSum("idle", cause)
	}
	// short unrecorded stretches are per-operator Python: launch overhead
	if ns, n := t.sumOf("idle/unrecorded/"); n > 0 && float64(ns)/float64(n) < shortGapNS {
		idle["launch"] += idle["unrecorded"]
		idle["unrecorded"] = 0
	}
	taken, left := j.profilerCost(run, idle, step)
	for cause, cost := range idle {
		if !j.costsEnough(cost, step) {
			continue
		}
		spec := accountKinds[cause]
		c := rootCause{Cause: report.Cause{RunID: run, Kind: spec.kind, Why: cause, CostNS: cost, CostPct: pct(cost, step), Fix: spec.fix}}
		var top string
		if subs := subjects[cause]; len(subs) > 0 {
			top = subs[0]
		}
		if top != "" {
			c.Rank = ptr(t.rankOf[top])
		}
		if multi && coveredByLate(others, cause, t.perRank, "idle/"+cause+"/") {
			continue // a late rank's cause already tells it
		}
		if cause == "unrecorded" {
			// stretches of 1 ms and more are host work of their own the
			// profiler did not record; shorter ones, gaps between events
			ns, n := t.sumOf("idle/unrecorded/")
			c.gaps = n == 0 || float64(ns)/float64(n) < longGapNS
		}
		c.profiler, c.profilerStep = taken[cause], step
		if l, ok := left[cause]; ok {
			c.unsure = !j.costsEnough(l, step)
		}
		c.Subject, c.subjectKey, c.stack = subjectOf(top), top, -1
		if top != "" {
			c.stack = t.stack[top]
		}
		out = append(out, c)
	}
	if copyNS := t.catSum("copy"); j.costsEnough(copyNS, step) {
		kinds := t.catKeys("copy")
		c := rootCause{Cause: report.Cause{RunID: run, Kind: "copies", Why: "copies", CostNS: copyNS, CostPct: pct(copyNS, step),
			Fix: "pin the host buffers (pin_memory=True in the DataLoader, tensor.pin_memory() once) and copy with non_blocking=True, ahead of use on a side stream (prefetch the next batch while this one computes); keep tensors that do not change on the GPU"}}
		if len(kinds) > 0 {
			c.Subject = strings.SplitN(kinds[0], "/", 3)[1]
			c.Rank = ptr(t.rankOf[kinds[0]])
		}
		c.stack = -1
		if !(multi && coveredByLate(others, "copies", t.perRank, "copy/")) {
			out = append(out, c)
		}
	}

	// one rank of several that loses more than its peers to a cause: its
	// peers wait for it at the collectives
	if multi {
		out = append(out, j.rankOutliers(run, ra, t, others)...)
	}

	// precision: FP32 matmuls on the CUDA cores
	if c, ok := j.precisionCause(run, step); ok {
		out = append(out, c)
	}

	// one-off stalls: outlier steps, explained by what grew in them
	for _, rank := range slices.Sorted(maps.Keys(ra.ranks)) {
		for _, s := range ra.ranks[rank] {
			if !s.outlier {
				continue
			}
			c, ok := j.stallCause(run, ra, s, t, others)
			c.firstStep = s == ra.ranks[rank][0]
			// a hiccup of a few ms is an outlier line, not a root cause; the
			// stall's size is the step's excess, or what grew in it where
			// that is more (the other reasons' time shrank around it)
			if ok && (max(c.StallNS, c.grew) >= j.cfg.OneOffNS || j.costsEnough(c.CostNS, step)) {
				out = append(out, c)
			}
		}
	}

	for i := range out {
		c := &out[i]
		if c.Rank != nil && c.stack >= 0 {
			c.Stack = j.stacks[StackKey{run, *c.Rank, c.stack}]
		}
		c.Headline, c.Evidence = accountText(*c, t)
		if c.profiler > 0 || c.unsure {
			then := " (time untraced steps to confirm)"
			if c.unsure {
				then = fmt.Sprintf("; at %s an event, the most recording has been measured to cost, it could be nearly all the profiler's: time untraced steps (--untraced-step) before acting on it", mdfmt.Duration(profilerEventHighNS))
			}
			c.Headline += fmt.Sprintf(", after taking off %s a step that is the profiler's own recording cost%s", mdfmt.Duration(c.profiler), then)
			c.Evidence = append(c.Evidence, j.profilerText(run, *c))
		}
	}
	if c, ok := j.commCause(run, ra, t); ok {
		out = append(out, c)
	}
	return out
}

// profilerEventNS is what torch.profiler costs the host for each event it
// records (an operator, a runtime call, a Python frame), in a traced step
// that an untraced one does not pay. Measured on an H100 machine's host
// (bench/gpu, bench/ACCURACY.md): a host-bound transformer's step of
// 7,700 recorded events took 36.8 ms traced with with_stack and
// record_shapes, 32.1 ms traced without them (5,000 events) and 20.3 ms
// untraced: 2.1-2.3 us an event; a tiny MLP's, 4.6 us. The lower figure,
// rounded down, so that what is taken off is at most the profiler's.
const profilerEventNS = 2000

// profilerEventHighNS is the most an event has been measured to cost: the
// tiny MLP's 4.6 us (above); the healthy transformer of bench/gpu's lean
// traces (no stacks, no shapes) took at least 3.4 us an event (47.6 ms a
// step traced, 30-31 ms untraced, 5,159 events), its small batch 2.8 us.
// A host-side cause that would not cost enough after this much an event is
// taken off is unsure: the trace cannot tell it from the profiler's own
// cost (the lean healthy run, GPU-bound untraced, showed 8.8 ms a step of
// launch-bound idle left after 2 us an event). One job has cost more: a
// per-parameter Adam's thousands of tiny operators, 10 us an event; what
// is ranked by this figure can still be the profiler's there.
const profilerEventHighNS = 4600

// profilerCost takes the profiler's own recording cost off a run's
// host-side idle (launch and host work, in proportion), the part of a
// traced step of step ns that the untraced job does not spend: the
// traced step less the untraced one where the user gave it
// (Thresholds.UntracedStepNS), else the recorded events' estimate. What
// it took off, by cause; and, without an untraced step, what would be
// left of each had every event cost profilerEventHighNS.
func (j *judge) profilerCost(run string, idle map[string]float64, step float64) (taken, left map[string]float64) {
	events := j.recorded[run].Events()
	cost, high := events*profilerEventNS, events*profilerEventHighNS
	if u := j.cfg.UntracedStepNS; u > 0 {
		cost, high = max(0, step-u), 0
	}
	side := idle["launch"] + idle["host"]
	if cost <= 0 || side <= 0 {
		return nil, nil
	}
	cut, cutHigh := min(cost, side), min(high, side)
	taken = map[string]float64{}
	if high > 0 {
		left = map[string]float64{}
	}
	for _, cause := range []string{"launch", "host"} {
		if left != nil {
			left[cause] = idle[cause] - idle[cause]/side*cutHigh
		}
		taken[cause] = idle[cause] / side * cut
		idle[cause] -= taken[cause]
	}
	return taken, left
}

// profilerText is the evidence line of a host-side cause the profiler's
// cost was taken off.
func (j *judge) profilerText(run string, c rootCause) string {
	if u := j.cfg.UntracedStepNS; u > 0 {
		return fmt.Sprintf("the profiler's own cost: a typical traced step takes %s and an untraced one %s (as given, --untraced-step): "+
			"the %s between is what recording costs the host, and %s a step of it is taken off this cause",
			mdfmt.Duration(c.profilerStep), mdfmt.Duration(u), mdfmt.Duration(c.profilerStep-u), mdfmt.Duration(c.profiler))
	}
	r := j.recorded[run]
	what := fmt.Sprintf("%.0f operators, %.0f runtime and driver calls", r.Ops, r.Calls)
	if r.Python > 0 {
		what += fmt.Sprintf(" and %.0f Python frames (with_stack=True)", r.Python)
	}
	return fmt.Sprintf("the profiler's own cost: it recorded %s a step, about %s of host time at %s each that an untraced step does not spend; "+
		"%s a step of it is taken off this cause. Time some steps without the profiler: if they take about the GPU's busy time, the job is GPU-bound and this cause is mostly the profiler's",
		what, mdfmt.Duration(r.Events()*profilerEventNS), mdfmt.Duration(profilerEventNS), mdfmt.Duration(c.profiler))
}

// rankOutliers are the ranks of a multi-rank run that lose a step's time
// to a cause their peers do not (robust z-score over the ranks, the ranks
// without it counting zero), unless a cause already names the rank.
func (j *judge) rankOutliers(run string, ra *runAccount, t typical, others []rootCause) []rootCause {
	named := map[int]bool{}
	for _, c := range others {
		if c.Rank != nil {
			named[*c.Rank] = true
		}
		for _, m := range c.Ranks {
			named[m] = true
		}
	}
	ranks := j.rankCount(run)
	var out []rootCause
	for _, cause := range []string{"sync", "input", "host", "launch", "copies"} {
		prefix := "idle/" + cause + "/"
		if cause == "copies" {
			prefix = "copy/"
		}
		// each rank's typical cost from the step it began (a fault with an
		// onset mid-window is not averaged away), as late ranks are costed
		byRank := map[int]float64{}
		series := map[int][]float64{}
		for rank := range ra.ranks {
			any := false
			for _, s := range ra.steady(rank) {
				v := 0.0
				for _, row := range s.rows {
					if strings.HasPrefix(row.key(), prefix) {
						v += float64(row.ns)
					}
				}
				any = any || v > 0
				series[rank] = append(series[rank], v)
			}
			if any {
				byRank[rank] = onsetMean(series[rank])
			}
		}
		if len(byRank) == 0 {
			continue
		}
		all := slices.Collect(maps.Values(byRank))
		for len(all) < ranks {
			all = append(all, 0)
		}
		med, mad := MedianMAD(all)
		top, topV := -1, 0.0
		for _, rank := range slices.Sorted(maps.Keys(byRank)) {
			if byRank[rank] > topV {
				top, topV = rank, byRank[rank]
			}
		}
		excess := topV - med
		if top < 0 || named[top] || !j.costsEnough(excess, t.stepNS) || (excess/max(1.4826*mad, 0.005*t.stepNS, 1)) < j.cfg.MinCostZ ||
			!persistent(series[top], med+0.5*excess) {
			continue
		}
		spec := accountKinds[cause]
		kind, fix := spec.kind, spec.fix
		if cause == "copies" {
			kind, fix = "copies", whyFix["copies"]
		}
		c := rootCause{Cause: report.Cause{RunID: run, Kind: kind, Why: cause, Rank: ptr(top), CostNS: excess, CostPct: pct(excess, t.stepNS), Fix: fix}, stack: -1}
		// its costliest subject
		best := ""
		for k, rs := range t.perRank {
			if strings.HasPrefix(k, prefix) && (best == "" || rs[top] > t.perRank[best][top]) {
				best = k
			}
		}
		if best != "" {
			c.Subject, c.subjectKey = subjectOf(best), best
			if cause == "copies" {
				c.Subject = strings.SplitN(best, "/", 3)[1]
			}
		}
		c.peerMedian, c.rankOutlier = med, true
		named[top] = true
		out = append(out, c)
	}
	return out
}

// persistent says whether a cost recurs: above level in at least half the
// steps from the first that reaches it (one hiccup is an outlier step, not
// a rank's cause).
func persistent(series []float64, level float64) bool {
	from := 0
	for from < len(series) && series[from] < level {
		from++
	}
	n := 0
	for _, v := range series[from:] {
		if v >= level {
			n++
		}
	}
	return len(series[from:]) > 0 && 2*n >= len(series[from:]) && (n >= 2 || len(series) <= 2)
}

// onsetMean is the mean of a per-step series from the first step that
// reaches a quarter of its largest value (the outlier steps are out of the
// series already, so a burst is a cost, not a hiccup); the whole series'
// mean when that leaves fewer than three steps of a longer series.
func onsetMean(series []float64) float64 {
	top := slices.Max(series)
	from := 0
	for from < len(series) && series[from] < 0.25*top {
		from++
	}
	per := series[from:]
	if len(per) < 3 && len(series) >= 3 {
		per = series
	}
	sum := 0.0
	for _, v := range per {
		sum += v
	}
	return sum / float64(max(len(per), 1))
}

// costsEnough says whether a cost per step makes a root cause: at least
// causes.min_cost_ns and causes.min_cost_pct of the typical step.
func (j *judge) costsEnough(cost, step float64) bool {
	return cost >= j.cfg.MinCostNS && pct(cost, step) >= j.cfg.MinCostPct
}

// coveredByLate says whether a cost the account finds is mostly on a rank
// that a late-rank cause already names for the same reason.
func coveredByLate(others []rootCause, why string, perRank map[string]map[int]float64, prefix string) bool {
	byRank := map[int]float64{}
	total := 0.0
	for k, ranks := range perRank {
		if strings.HasPrefix(k, prefix) {
			for rank, v := range ranks {
				byRank[rank] += v
				total += v
			}
		}
	}
	for _, c := range others {
		if c.Rank == nil || (c.Kind != "late_rank" && c.Kind != "one_off_stall") {
			continue
		}
		if lateKind(c.Why) == why && byRank[*c.Rank] >= 0.5*total {
			return true
		}
	}
	return false
}

// lateKind maps a late rank's why to the account's cause.
func lateKind(why string) string {
	switch why {
	case "data_loader":
		return "input"
	case "gc", "checkpoint":
		return "host"
	}
	return why
}

// precisionCause is the time FP32 matmuls on the CUDA cores cost a step
// over the same work at the TF32 peak (matmul_precision).
func (j *judge) precisionCause(run string, step float64) (rootCause, bool) {
	for _, m := range j.metrics {
		if m.Detector != "matmul_precision" {
			continue
		}
		col := m.ColumnIndex()
		var ms, atTF32, atBF16, share float64
		var rank *int
		var kernel string
		ranks := map[int]bool{}
		for _, row := range m.Rows {
			if fmt.Sprint(row[col["run_id"]]) != run || fmt.Sprint(row[col["mode"]]) != "fp32" {
				continue
			}
			rk := int(report.Int(row[col["rank"]]))
			ranks[rk] = true
			v := report.Num(row[col["ms_per_step"]])
			if rank == nil || v > ms {
				rank, kernel = ptr(rk), fmt.Sprint(row[col["longest_kernel"]])
			}
			ms += v
			atTF32 += report.Num(row[col["ms_per_step_at_tf32"]])
			atBF16 += report.Num(row[col["ms_per_step_at_bf16"]])
			share = max(share, report.Num(row[col["pct_of_gpu_span"]]))
		}
		if len(ranks) == 0 || atTF32 <= 0 {
			return rootCause{}, false
		}
		n := float64(len(ranks))
		cost := (ms - atTF32) / n * 1e6
		if !j.costsEnough(cost, step) {
			return rootCause{}, false
		}
		c := rootCause{Cause: report.Cause{RunID: run, Kind: "precision", Why: "fp32", Rank: rank, CostNS: cost, CostPct: pct(cost, step),
			Fix: "let matmuls use the tensor cores: torch.backends.cuda.matmul.allow_tf32 = True (or torch.set_float32_matmul_precision(\"high\")), torch.backends.cudnn.allow_tf32 = True; better, train under torch.autocast(\"cuda\", dtype=torch.bfloat16); check the loss curve against an FP32 run for a few hundred steps"}}
		c.Subject, c.stack = kernel, -1
		c.precision = [3]float64{ms / n, atTF32 / n, atBF16 / n}
		c.share = share
		return c, true
	}
	return rootCause{}, false
}

// stallCause explains an outlier step by what grew in it against the
// rank's other complete steps.
func (j *judge) stallCause(run string, ra *runAccount, s *acctStep, t typical, others []rootCause) (rootCause, bool) {
	grew := ra.excess(s, true)
	top := topKey(grew)
	if top == "" {
		return rootCause{}, false
	}
	cat, cause, _ := strings.Cut(top, "/")
	if cat == "comm" {
		return rootCause{}, false // it waited for a peer: the peer's stall is the cause
	}
	for _, c := range others {
		if c.Kind == "one_off_stall" && c.Rank != nil && *c.Rank == s.rank && c.Step != nil && *c.Step == s.step {
			return rootCause{}, false // the collectives already name it
		}
	}
	// the subject that grew most within that cause
	bySubject := ra.excess(s, false)
	subj, subjNS := "", 0.0
	for k, v := range bySubject {
		if strings.HasPrefix(k, top+"/") && (v > subjNS || v == subjNS && k < subj) {
			subj, subjNS = k, v
		}
	}
	var stack int32 = -1
	for _, row := range s.rows {
		if row.key() == subj && row.stack >= 0 {
			stack = row.stack
		}
	}
	median := t.stepNS
	excess := s.len() - median
	n := 0
	for _, o := range ra.ranks[s.rank] {
		if o.complete {
			n++
		}
	}
	why := cause
	if cat == "copy" {
		why = "copies"
	}
	if cat == "compute" {
		why = "compute"
	}
	c := rootCause{Cause: report.Cause{RunID: run, Kind: "one_off_stall", Rank: ptr(s.rank), Step: ptr(s.step), Why: why,
		CostNS: excess / float64(max(n, 1)), StallNS: excess, CostPct: pct(excess/float64(max(n, 1)), median),
		AtNS: s.start, Fix: stallFix(why, subjectOf(subj))}}
	c.Subject, c.subjectKey, c.stack, c.grew = subjectOf(subj), subj, stack, grew[top]
	return c, true
}

func stallFix(why, subject string) string {
	switch {
	case checkpointRE.MatchString(subject):
		return whyFix["checkpoint"]
	case gcRE.MatchString(subject):
		return whyFix["gc"]
	case why == "input":
		return whyFix["data_loader"]
	case why == "sync":
		return whyFix["sync"]
	case why == "unrecorded":
		return "the profiler recorded nothing on the host while the GPU waited: find what ran there (torch.profiler with with_stack=True, record_function around your own code, or py-spy dump during that step), then move it off the step (a background thread, every N steps, asynchronous) or make it cheaper; if it recurs every N steps, that is its period"
	}
	return "find what the host did before that step (the stack named here): move it off the step (a background thread, every N steps, asynchronous), or make it cheaper; if it recurs every N steps, that is its period"
}
