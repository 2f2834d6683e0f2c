package causes

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/detectors/report"
)

// kindComm is the cause kind of communication the GPU does not hide.
const kindComm = "comm_bound"

// commFix is the one fix of exposed communication.
const commFix = "hide the communication behind compute: with DDP let the gradient buckets all-reduce during the backward pass (bucket_cap_mb, gradient_as_bucket_view=True, no find_unused_parameters), with FSDP prefetch (backward_prefetch=BACKWARD_PRE, forward_prefetch=True), with DeepSpeed ZeRO overlap_comm=True; send fewer bytes (bf16 gradient reduction, gradient accumulation with no_sync so that only the last micro-batch reduces); and check that the collectives use NVLink and InfiniBand (slow_link, gpu_link)"

// commCause is the communication a typical step does not hide: the
// stretches in which only collectives run on the GPU (the account's
// comm/exposed). A rank that waits in a collective for a late peer
// counts that wait there too, which the late rank's cause tells; the
// rank that loses least to it pays only the part of the transfer its
// compute does not hide. That floor over the traced ranks is the cost:
// what hiding the communication, or moving fewer bytes, saves each step.
// A rank that shows none makes the floor 0: no cause.
//
// Only where one rank of a job of several is traced: with several traced,
// the verdict weighs the ranks against each other (late ranks, slow
// links, a balanced run's "what they share"), and exposed communication
// shared by all is often the tensor-parallel all-reduce, which overlap
// cannot hide (bench/accuracy's clean tensor-parallel runs expose 25-60%
// of their step in it, and a cause there would head every one); telling
// it from data-parallel traffic needs each stretch's process group.
func (j *judge) commCause(run string, ra *runAccount, t typical) (rootCause, bool) {
	if len(ra.ranks) != 1 {
		return rootCause{}, false
	}
	per := map[int]float64{} // by rank, every collective summed
	for k, ranks := range t.perRank {
		if strings.HasPrefix(k, "comm/") {
			for rank, v := range ranks {
				per[rank] += v
			}
		}
	}
	if len(per) == 0 {
		return rootCause{}, false
	}
	ranks := slices.Sorted(maps.Keys(ra.ranks))
	floor, least := -1.0, -1
	var all []float64
	for _, rank := range ranks {
		v := per[rank]
		all = append(all, v)
		if least < 0 || v < floor {
			floor, least = v, rank
		}
	}
	if least < 0 || !j.costsEnough(floor, t.stepNS) {
		return rootCause{}, false
	}
	c := rootCause{Cause: report.Cause{RunID: run, Kind: kindComm, Why: "comm", CostNS: floor, CostPct: pct(floor, t.stepNS), Fix: commFix}}
	c.stack = -1
	var run0 report.RunInfo
	for _, r := range j.runs {
		if r.RunID == run {
			run0 = r
		}
	}
	who := fmt.Sprintf("rank %d", least)
	if len(ranks) > 1 {
		who = fmt.Sprintf("every traced rank, the least rank %d", least)
	}
	most := ""
	if _, subs := t.causeSum("comm", "exposed"); len(subs) > 0 && subjectOf(subs[0]) != "" {
		c.Subject = subjectOf(subs[0])
		most = fmt.Sprintf(" (the most: `%s`)", c.Subject)
	}
	c.Headline = fmt.Sprintf("communication is exposed %s a step (%.1f%% of the median step, %s): the GPU runs only collectives%s, with no compute beside them, on %s",
		mdfmt.Duration(floor), c.CostPct, mdfmt.Duration(t.stepNS), most, who)
	if part := traced(run0); part != "" {
		c.Headline += fmt.Sprintf("; %s traced, so part of it may be waiting for the untraced ranks", part)
	}
	c.Evidence = []string{t.breakdown()}
	if len(ranks) > 1 {
		med, _ := MedianMAD(all)
		top := slices.Max(all)
		c.Evidence = append(c.Evidence, fmt.Sprintf("exposed communication a step by rank: the least %s (rank %d), median %s, the most %s; what a rank has beyond the least is mostly waiting for its peers at the collectives, which a late rank's cause tells",
			mdfmt.Duration(floor), least, mdfmt.Duration(med), mdfmt.Duration(top)))
	}
	return c, true
}
