package kineto

import (
	"fmt"

	"github.com/trainscope/trainscope/ingest/trace"
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
		for _, m := range []map[int32]*trace.Span{b.cpuSteps, b.gpuSteps} {
			for _, sp := range m {
				sp.Start += base
				sp.End += base
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
	b.bindFlows()
	b.flows = nil // no use past here: let them go before the columns below are made
	b.assignOpCosts()
	// steps, launches, self times, the account and the span, as for
	// every reader
	launchTS := trace.Derive(t, steps, trace.DeriveOptions{})
	if b.slim {
		b.launchTS = launchTS // only GPU rows have one: kept so for the second pass
	} else {
		s.LaunchTS = launchTS.Dense(n)
	}
	b.nameCollectives()

	t.Counts["events"] = b.nEvents
	for _, ph := range []byte("XBEiICMstf") {
		if b.phCounts[ph] > 0 {
			t.Counts[string(ph)] = b.phCounts[ph]
		}
	}
	for id, c := range b.counts {
		t.Counts["kind:"+b.str.Get(id)] = c
	}
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
