package kineto

import (
	"fmt"
	"slices"

	"github.com/trainscope/trainscope/ingest/timeline"
	"github.com/trainscope/trainscope/stream"
)

// finish resolves everything that needs the whole file: the rank, the time
// base, steps, launches and the step of every slice.
func (b *builder) finish(opt Options) error {
	t := b.t
	if b.longNames > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d distinct name(s) were longer than %d KiB and were cut to it (the first in the event ending at byte %d)", b.longNames, MaxNameBytes>>10, b.longNamesAt))
	}
	if b.badText > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d distinct name(s) were not valid UTF-8; bad bytes replaced by U+FFFD (the first in the event ending at byte %d)", b.badText, b.badTextAt))
	}
	if b.negDur > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d event(s) had a negative duration (clock skew in the profiler) and were kept with a duration of 0 (the first in the event ending at byte %d)", b.negDur, b.negDurAt))
	}
	b.resolveRank(opt)
	if b.flowsSkipped && b.uncorrelated > 0 {
		if err := b.readFlows(t.Path, opt); err != nil {
			return err
		}
	}
	s := b.s
	n := s.Len()
	if t.HasBaseTime && t.BaseTimeNS != 0 {
		base := t.BaseTimeNS
		for i := range s.TS.V {
			s.TS.V[i] += base
		}
		for i := range t.Counters.TS.V {
			t.Counters.TS.V[i] += base
		}
		for _, m := range []map[int32]*span{b.cpuSteps, b.gpuSteps} {
			for _, sp := range m {
				sp.start += base
				sp.end += base
			}
		}
		for i := range b.flows {
			b.flows[i].ts += base
		}
	}
	if t.Format == FormatMemoryTimeline {
		b.fixTimelineTimes()
	}

	steps := b.cpuSteps
	if len(steps) == 0 {
		steps = b.gpuSteps
	}
	nums := make([]int32, 0, len(steps))
	for k := range steps {
		nums = append(nums, k)
	}
	slices.SortFunc(nums, func(x, y int32) int {
		if c := steps[x].start - steps[y].start; c != 0 {
			if c < 0 {
				return -1
			}
			return 1
		}
		return int(x - y)
	})
	for _, k := range nums {
		t.Steps.Step.Append(k)
		t.Steps.Start.Append(steps[k].start)
		t.Steps.End.Append(steps[k].end)
	}

	b.bindFlows()
	b.flows = nil // no use past here: let them go before the columns below are made
	b.assignOpCosts()
	b.assignSteps(n)
	b.assignSelfTimes(n)
	t.Account = timeline.Account(s, &t.Steps)
	b.nameCollectives()

	t.StartNS, t.EndNS = 0, 0
	other := b.kinds[stream.KindOther]
	first := true
	for i := range n {
		if s.Kind.V[i] == other {
			continue
		}
		st, en := s.TS.V[i], s.TS.V[i]+s.Dur.V[i]
		if first || st < t.StartNS {
			t.StartNS = st
		}
		if first || en > t.EndNS {
			t.EndNS = en
		}
		first = false
	}

	t.Counts["events"] = b.nEvents
	for _, ph := range []byte("XBEiICMstf") {
		if b.phCounts[ph] > 0 {
			t.Counts[string(ph)] = b.phCounts[ph]
		}
	}
	for id, c := range b.counts {
		t.Counts["kind:"+b.str.Get(id)] = c
	}
	t.Counts["steps"] = t.Steps.Len()
	t.countersLeft = b.countersLeft
	if b.slim && n > 0 {
		b.keepForSecondPass(t.Path, opt)
	}
	return nil
}

func (b *builder) resolveRank(opt Options) {
	t := b.t
	switch r, ok := RankFromName(t.Path); {
	case t.Dist.Rank != nil:
		t.Rank, t.RankSource = int32(*t.Dist.Rank), "distributedInfo"
	case ok:
		t.Rank, t.RankSource = int32(r), "file name"
	case opt.Rank >= 0:
		t.Rank, t.RankSource = int32(opt.Rank), "flag"
	default:
		t.Rank, t.RankSource = 0, "default"
	}
}

func (b *builder) fixTimelineTimes() {
	ts := b.t.Counters.TS.V
	first := int64(-1)
	for _, v := range ts {
		if v > 0 && (first < 0 || v < first) {
			first = v
		}
	}
	for i, v := range ts {
		if v < 0 {
			ts[i] = max(first, 0)
		}
	}
}

// bindFlows fills missing correlation ids from ac2g flow events: the flow
// start sits on the launching runtime call, the flow end on the GPU activity.
func (b *builder) bindFlows() {
	s := b.s
	if len(b.flows) == 0 || b.uncorrelated == 0 {
		return
	}
	type key struct{ pid, tid, ts int64 }
	ends := make(map[key]int64, len(b.flows))
	for _, f := range b.flows {
		ends[key{f.pid, f.tid, f.ts}] = f.id
	}
	linkable := map[int32]bool{}
	for _, k := range []string{stream.KindKernel, stream.KindComm, stream.KindMemcpy, stream.KindMemset, stream.KindRuntime, stream.KindDriver} {
		linkable[b.kinds[k]] = true
	}
	for i := range s.Len() {
		if s.Correlation.Valid(i) || !linkable[s.Kind.V[i]] {
			continue
		}
		pid, tid := s.Thread(i)
		if id, ok := ends[key{pid, tid, s.TS.V[i]}]; ok {
			s.Correlation.Set(i, id)
			b.flowsBound = true
		}
	}
}

// assignSteps gives every slice its step: GPU work takes the step of the
// runtime call that launched it (as HTA does), host work the ProfilerStep
// range that contains its start.
func (b *builder) assignSteps(n int) {
	s := b.s
	t := b.t
	s.Step = stream.Nulls[int32](n)
	// launch times as (row, value) pairs: only GPU rows have one (a
	// fifth of syn8's), and a slim first pass keeps them so for the second
	var launchTS stream.Sparse[int64]
	stepAt := t.Steps.At
	runtime, driver := b.kinds[stream.KindRuntime], b.kinds[stream.KindDriver]
	gpuKinds := map[int32]bool{b.kinds[stream.KindKernel]: true, b.kinds[stream.KindComm]: true,
		b.kinds[stream.KindMemcpy]: true, b.kinds[stream.KindMemset]: true}
	launches := make(map[int64]int32, b.counts[runtime]+b.counts[driver])
	for i := range n {
		k := s.Kind.V[i]
		if gpuKinds[k] || k == b.kinds[stream.KindGPUAnnotation] || k == b.kinds[stream.KindSync] {
			continue
		}
		if step, ok := stepAt(s.TS.V[i]); ok {
			s.Step.Set(i, step)
		}
		if (k == runtime || k == driver) && s.Correlation.Valid(i) {
			launches[s.Correlation.V[i]] = int32(i)
		}
	}
	for i := range n {
		if !gpuKinds[s.Kind.V[i]] || !s.Correlation.Valid(i) {
			continue
		}
		j, ok := launches[s.Correlation.V[i]]
		if !ok {
			continue
		}
		launchTS.Set(i, s.TS.V[j])
		if s.Step.Valid(int(j)) {
			s.Step.Set(i, s.Step.V[j])
		}
	}
	if b.slim {
		b.launchTS = launchTS
	} else {
		s.LaunchTS = launchTS.Dense(n)
	}
}

// assignSelfTimes gives every host slice its self time (see
// stream.SliceTable.AssignSelfTimes).
func (b *builder) assignSelfTimes(n int) {
	host := map[int32]bool{}
	for _, k := range []string{stream.KindCPUOp, stream.KindPython, stream.KindAnnotation, stream.KindRuntime, stream.KindDriver} {
		host[b.kinds[k]] = true
	}
	b.s.AssignSelfTimes(func(i int) bool { return host[b.s.Kind.V[i]] })
}
