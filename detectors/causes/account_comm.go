package causes

import (
	"fmt"
	"maps"
	"slices"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/detectors/report"
)

// kindComm is the cause kind of communication the GPU does not hide.
const kindComm = "comm_bound"

// commFix is the one fix of exposed communication.
const commFix = "hide the communication behind compute: with DDP let the gradient buckets all-reduce during the backward pass (bucket_cap_mb, gradient_as_bucket_view=True, no find_unused_parameters), with FSDP prefetch (backward_prefetch=BACKWARD_PRE, forward_prefetch=True), with DeepSpeed ZeRO overlap_comm=True; send fewer bytes (bf16 gradient reduction, gradient accumulation with no_sync so that only the last micro-batch reduces); and check that the collectives use NVLink and InfiniBand (slow_link, gpu_link)"

// commCause is the communication a typical step of a run's one traced
// rank does not hide: the stretches in which only collectives run on its
// GPU (the account's comm category, by collective), what hiding it, or
// moving fewer bytes, would save each step. Part of it may be waiting for
// the untraced ranks, which the headline says.
//
// Only where one rank is traced: with several, the verdict weighs the
// ranks against each other (late ranks, slow links, a balanced run's "what
// they share"), and exposed communication shared by all is often the
// tensor-parallel all-reduce, which overlap cannot hide (bench/accuracy's
// clean tensor-parallel runs expose 25-60% of their step in it, and a
// cause there would head every one); telling it from data-parallel
// traffic needs each stretch's process group.
func (j *judge) commCause(run string, ra *runAccount, t typical) (rootCause, bool) {
	if len(ra.ranks) != 1 {
		return rootCause{}, false
	}
	// one rank: the typical step is its own
	cost := t.catSum("comm")
	if !j.costsEnough(cost, t.stepNS) {
		return rootCause{}, false
	}
	rank := slices.Collect(maps.Keys(ra.ranks))[0]
	c := rootCause{Cause: report.Cause{RunID: run, Kind: kindComm, Why: "comm", CostNS: cost, CostPct: pct(cost, t.stepNS), Fix: commFix}}
	c.stack = -1
	most := ""
	if keys := t.catKeys("comm"); len(keys) > 0 && subjectOf(keys[0]) != "" {
		c.Subject = subjectOf(keys[0])
		most = fmt.Sprintf(" (the most: `%s`)", c.Subject)
	}
	c.Headline = fmt.Sprintf("communication is exposed %s a step (%.1f%% of the median step, %s): the GPU runs only collectives%s, with no compute beside them, on rank %d",
		mdfmt.Duration(cost), c.CostPct, mdfmt.Duration(t.stepNS), most, rank)
	if part := traced(j.runInfo(run)); part != "" {
		c.Headline += fmt.Sprintf("; %s traced, so part of it may be waiting for the untraced ranks", part)
	}
	c.Evidence = []string{t.breakdown()}
	return c, true
}
