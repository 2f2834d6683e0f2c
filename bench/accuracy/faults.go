package main

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// FaultType names an injected fault by the detector that should report it.
type FaultType string

const (
	Clean          FaultType = "clean"
	SlowRank       FaultType = "slow_rank"
	SlowHost       FaultType = "slow_host"
	SlowLink       FaultType = "slow_link"
	DataStall      FaultType = "data_stall"
	SyncAPI        FaultType = "sync_api"
	PageableMemcpy FaultType = "pageable_memcpy"
	Hang           FaultType = "hang"
	LaunchBound    FaultType = "launch_overhead"
	// Distractor is a clean run that looks bad everywhere alike: every
	// link is slow, so every rank spends much of its step communicating
	// and waiting, and no rank or group may be blamed for it.
	Distractor FaultType = "distractor"
)

// faultTypes is the order of the report's rows and the round robin that
// assigns scenario types.
var faultTypes = []FaultType{SlowRank, SlowHost, SlowLink, DataStall, SyncAPI, PageableMemcpy, Hang, LaunchBound}

// Fault is one scenario's ground truth: what was injected where, how
// strongly and from which step.
type Fault struct {
	Type    FaultType
	Rank    int     // the faulty rank (-1: every rank, for launch_overhead)
	Host    int     // slow_host
	Group   int     // slow_link: index of the tensor-parallel group
	Factor  float64 // slow_rank, slow_host: compute time factor; slow_link: transfer time factor
	Step    int     // first faulty step (data_stall: the stalled step; hang: the step it hangs in)
	StallUs float64 // data_stall: extra loader time; hang: how long peers wait from the step's start
	Calls   int     // pageable_memcpy: copies a step; launch_overhead: tiny kernels a step; hang: 0 = before a TP all-reduce, 1 = before the DP all-reduce
	Weak    bool    // drawn by weaken: at or under the detection thresholds
	Rate    float64 // sync_api: chance of a synchronize after each compute launch; clean: the link factor of Group
	Comm    float64 // distractor: transfer factor of every link
	Also    *Fault  // a second fault in the same run (never a hang)
}

// clean reports whether the run has no fault to find.
func (f Fault) clean() bool { return f.Type == Clean || f.Type == Distractor }

// parts lists the run's faults: itself, and the second one if any.
func (f Fault) parts() []Fault {
	if f.Also != nil {
		return []Fault{f, *f.Also}
	}
	return []Fault{f}
}

// draw picks a fault of type ft with random placement and strength. The
// ranges keep every fault inside the analysis window (steps 1..steps-1)
// and above the detectors' default thresholds by construction; see
// ACCURACY.md for why and what that leaves untested.
func draw(ft FaultType, t topology, rng *rand.Rand) Fault {
	// onsets in the first half of the window: the slow_* detectors compare
	// medians over the window (see ACCURACY.md)
	f := Fault{Type: ft, Rank: rng.IntN(t.ranks), Step: 1 + rng.IntN(t.steps/2)}
	uniform := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	switch ft {
	case SlowRank:
		f.Factor = uniform(1.3, 3)
	case SlowHost:
		f.Host = rng.IntN(t.hosts())
		f.Factor = uniform(1.3, 3)
	case SlowLink:
		f.Group = rng.IntN(t.groups())
		f.Factor = uniform(1.5, 4)
	case DataStall:
		// any step, the first and the last too: a stall is searched for in
		// every complete step, not only the analysis window's
		f.Step = 1 + rng.IntN(t.steps) // steps are numbered from 1
		f.StallUs = math.Exp(uniform(math.Log(15e3), math.Log(500e3)))
	case SyncAPI:
		f.Rate = uniform(0.08, 0.2) // from ~5% of a step: the least a root cause costs (causes.min_cost_pct)
	case PageableMemcpy:
		f.Step = 1 + rng.IntN(t.steps-1)
		f.Calls = 1 + rng.IntN(3)
	case Hang:
		f.Step = 3 + rng.IntN(t.steps-2)
		f.Calls = rng.IntN(2)
		f.StallUs = uniform(2e6, 22e6)
	case LaunchBound:
		// an unfused per-parameter optimizer loop: a few hundred
		// parameters, a few tiny kernels each, more launch time than the
		// step has GPU work to hide it behind
		f.Calls = 600 + rng.IntN(1201)
		if rng.IntN(3) == 0 {
			f.Rank = -1
		}
	case Clean, Distractor:
		// healthy variation just under what any detector should report: one
		// rank's kernels a little slower, one group's link a little slower,
		// one loader hiccup of a few milliseconds
		f.Factor = uniform(1, 1.06)
		f.Group = rng.IntN(t.groups())
		f.Rate = uniform(1, 1.12)
		f.Step = 1 + rng.IntN(t.steps-1)
		f.StallUs = uniform(0, 5e3)
		if ft == Distractor {
			f.Comm = uniform(2.5, 5)
		}
	}
	return f
}

// secondTypes are the faults a run can carry beside another: not a hang
// (it ends the run) and not a slow host (it would swallow a slow rank).
var secondTypes = []FaultType{SlowRank, SlowLink, DataStall, SyncAPI, PageableMemcpy, LaunchBound}

// addSecond gives f a second fault of another type, on another rank (and
// for a slow link, another group than a first slow link's).
func addSecond(f Fault, t topology, rng *rand.Rand) Fault {
	var types []FaultType
	for _, x := range secondTypes {
		if x != f.Type {
			types = append(types, x)
		}
	}
	g := draw(types[rng.IntN(len(types))], t, rng)
	for g.Rank == f.Rank || (f.Type == SlowHost && g.Rank/t.perHost == f.Host) {
		g.Rank = rng.IntN(t.ranks)
	}
	if g.Type == LaunchBound {
		g.Rank = max(g.Rank, 0) // one rank: every rank's launch overhead would blame none
		if g.Rank == f.Rank {
			g.Rank = (f.Rank + 1) % t.ranks
		}
	}
	f.Also = &g
	return f
}

// weaken redraws a fault's strength and onset from a range that reaches
// down to (and below) the detectors' default thresholds, and lets the onset
// fall anywhere in the window: the harness's "weak" scenarios, which
// measure where detection stops rather than whether it works.
func weaken(f Fault, t topology, rng *rand.Rand) Fault {
	uniform := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	f.Weak = true
	anyStep := 1 + rng.IntN(t.steps-1)
	switch f.Type {
	case SlowRank, SlowHost:
		f.Factor, f.Step = uniform(1.05, 1.3), anyStep
	case SlowLink:
		f.Factor, f.Step = uniform(1.1, 1.5), anyStep
	case DataStall:
		f.StallUs = uniform(3e3, 15e3)
	case SyncAPI:
		f.Rate, f.Step = uniform(0.005, 0.03), anyStep
	case PageableMemcpy:
		f.Calls, f.Step = 1, t.steps-1 // one copy, in the window's last step only
	case Hang:
		f.StallUs = uniform(0.2e6, 2e6)
	case LaunchBound:
		f.Calls, f.Step = 10+rng.IntN(291), anyStep
	}
	return f
}

// String describes the fault for the per-scenario log.
func (f Fault) String() string {
	if f.Also != nil {
		g := f
		g.Also = nil
		return g.String() + " + " + string(f.Also.Type) + ": " + f.Also.String()
	}
	switch f.Type {
	case SlowRank:
		return fmt.Sprintf("rank %d compute x%.2f from step %d", f.Rank, f.Factor, f.Step)
	case SlowHost:
		return fmt.Sprintf("host %s compute x%.2f from step %d", hostName(f.Host), f.Factor, f.Step)
	case SlowLink:
		return fmt.Sprintf("tp group %d transfers x%.2f from step %d", f.Group, f.Factor, f.Step)
	case DataStall:
		return fmt.Sprintf("rank %d loader +%.0f ms in step %d", f.Rank, f.StallUs/1e3, f.Step)
	case SyncAPI:
		return fmt.Sprintf("rank %d synchronizes after %.0f%% of launches from step %d", f.Rank, 100*f.Rate, f.Step)
	case PageableMemcpy:
		return fmt.Sprintf("rank %d %d pageable HtoD copies a step from step %d", f.Rank, f.Calls, f.Step)
	case Hang:
		where := "a TP all-reduce"
		if f.Calls == 1 {
			where = "the DP all-reduce"
		}
		return fmt.Sprintf("rank %d hangs before %s of step %d, peers wait %.1f s", f.Rank, where, f.Step, f.StallUs/1e6)
	case LaunchBound:
		who := fmt.Sprintf("rank %d", f.Rank)
		if f.Rank < 0 {
			who = "every rank"
		}
		return fmt.Sprintf("%s launches %d tiny kernels a step from step %d", who, f.Calls, f.Step)
	}
	if f.Type == Distractor {
		return fmt.Sprintf("every link x%.2f slower (no rank at fault; rank %d compute x%.3f)", f.Comm, f.Rank, f.Factor)
	}
	return fmt.Sprintf("no fault (rank %d compute x%.3f, tp group %d transfers x%.3f, rank %d loader +%.1f ms in step %d)",
		f.Rank, f.Factor, f.Group, f.Rate, f.Rank, f.StallUs/1e3, f.Step)
}

// locatedAt reports whether a finding of the expected detector points at
// the injected place: the rank, the host, or the process group's ranks.
func (f Fault) locatedAt(t topology, fd finding) bool {
	switch f.Type {
	case SlowHost:
		return fd.host == hostName(f.Host) || fd.subject == hostName(f.Host)
	case SlowLink:
		var m []int
		for i := range t.tp {
			m = append(m, f.Group*t.tp+i)
		}
		return containsGroup(fd.subject, "["+joinInts(m)+"]")
	case LaunchBound:
		return fd.rank >= 0 && (f.Rank < 0 || fd.rank == f.Rank)
	}
	return fd.rank == f.Rank
}

func containsGroup(subject, ranks string) bool {
	for i := 0; i+len(ranks) <= len(subject); i++ {
		if subject[i:i+len(ranks)] == ranks {
			return true
		}
	}
	return false
}
