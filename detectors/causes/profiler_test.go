package causes

import (
	"math"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors/report"
)

// oneRank is a run of one rank and six 53 ms steps, each 27 ms of
// compute, 17 ms idle in launches and 9 ms idle in host work; stallStep
// (when >= 0) holds 180 ms more host work.
func oneRank(rec Recorded, stallStep int) Input {
	in := Input{Config: defaults,
		Runs:     []report.RunInfo{{RunID: "r", Ranks: []int{0}, WorldSize: 1, GPUActivities: 100, TraceRanks: 1}},
		Steps:    map[string]StepWindow{"r": {Steps: 6, MedianNS: 53e6}},
		Account:  map[string][]AccountRow{},
		Recorded: map[string]Recorded{"r": rec},
	}
	at := int64(0)
	for step := range 6 {
		host := int64(9e6)
		if step == stallStep {
			host += 180e6
		}
		end := at + 27e6 + 17e6 + host
		for _, r := range []struct {
			cat, cause, subject string
			ns                  int64
		}{{"compute", "kernels", "", 27e6}, {"idle", "launch", "aten::copy_", 17e6}, {"idle", "host", "train.py(9): save", host}} {
			in.Account["r"] = append(in.Account["r"], AccountRow{Rank: 0, Step: step + 3, StartNS: at, EndNS: end, Complete: true, InWindow: true,
				Cat: r.cat, Cause: r.cause, Subject: r.subject, Stack: -1, NS: r.ns, Intervals: 10, LongestNS: r.ns / 10})
		}
		at = end
	}
	return in
}

func causeOf(v Verdict, kind string) *report.Cause {
	for i := range v.Causes {
		if v.Causes[i].Kind == kind {
			return &v.Causes[i]
		}
	}
	return nil
}

// The profiler's recording cost (profilerEventNS an event) comes off the
// host-side causes in proportion, and the headline says so; a trace that
// recorded nothing keeps them whole.
func TestProfilerCostTakenOff(t *testing.T) {
	rec := Recorded{Ops: 4400, Calls: 780, Python: 2640} // the H100 transformer's step
	cost := rec.Events() * profilerEventNS
	for _, c := range []struct {
		name             string
		rec              Recorded
		launch, hostWork float64
	}{
		{"no events", Recorded{}, 17e6, 9e6},
		{"a traced transformer", rec, 17e6 - 17.0/26*cost, 9e6 - 9.0/26*cost},
		// more recorded than the host-side idle: both go to zero
		{"more than the idle", Recorded{Ops: 20000}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(oneRank(c.rec, -1))
			for kind, want := range map[string]float64{"launch_bound": c.launch, "host_bound": c.hostWork} {
				got := causeOf(v, kind)
				if want == 0 {
					if got != nil {
						t.Errorf("%s: %.0f ns a step, want no cause", kind, got.CostNS)
					}
					continue
				}
				if got == nil || math.Abs(got.CostNS-want) > 1 {
					t.Fatalf("%s: %+v, want %.0f ns a step", kind, got, want)
				}
				taken := strings.Contains(got.Headline, "profiler's own recording cost")
				if taken != (c.rec.Events() > 0) {
					t.Errorf("%s: headline %q: says the profiler's cost was taken off: %v", kind, got.Headline, taken)
				}
			}
		})
	}
}

// A stall in the first recorded step is listed after the other causes
// (it pays for the profiler's start) and heads the verdict only when
// nothing else costs enough; the same stall in a later step heads it.
func TestFirstStepStall(t *testing.T) {
	for _, c := range []struct {
		step  int
		rec   Recorded
		heads bool
	}{
		{0, Recorded{}, false},
		{2, Recorded{}, true},
		// the profiler's cost takes every other cause away: the stall heads
		{0, Recorded{Ops: 20000}, true},
	} {
		v := Judge(oneRank(c.rec, c.step))
		stall := causeOf(v, "one_off_stall")
		if stall == nil {
			t.Fatalf("stall in step index %d: no one-off stall among %+v", c.step, v.Causes)
		}
		if got := v.Headlines[0].Kind == "one_off_stall"; got != c.heads {
			t.Errorf("stall in step index %d: heads the verdict %v, want %v (%q)", c.step, got, c.heads, v.Headlines[0].Text)
		}
		if first := strings.Contains(stall.Headline, "first step the profiler recorded"); first != (c.step == 0) {
			t.Errorf("stall in step index %d: %q", c.step, stall.Headline)
		}
		if c.step == 0 && v.Causes[len(v.Causes)-1].Kind != "one_off_stall" {
			t.Errorf("a first-step stall is not listed last: %+v", v.Causes)
		}
	}
}

// With the untraced step given (analyze --untraced-step), the traced step
// less it is what comes off, not the per-event estimate; an untraced step
// as long as the traced one takes nothing off.
func TestUntracedStepGiven(t *testing.T) {
	rec := Recorded{Ops: 4400, Calls: 780, Python: 2640}
	for _, c := range []struct {
		untraced, launch float64
	}{
		{45e6, 17e6 - 17.0/26*(53e6-45e6)},
		{53e6, 17e6},
		{20e6, 0},
	} {
		in := oneRank(rec, -1)
		in.Config.UntracedStepNS = c.untraced
		got := causeOf(Judge(in), "launch_bound")
		switch {
		case c.launch == 0 && got != nil:
			t.Errorf("untraced %.0f ms: launch-bound at %.0f ns a step, want none", c.untraced/1e6, got.CostNS)
		case c.launch > 0 && (got == nil || math.Abs(got.CostNS-c.launch) > 1):
			t.Errorf("untraced %.0f ms: %+v, want %.0f ns a step", c.untraced/1e6, got, c.launch)
		}
		if got != nil && got.CostNS < 17e6 && !strings.Contains(strings.Join(got.Evidence, " "), "as given, --untraced-step") {
			t.Errorf("untraced %.0f ms: the evidence does not say the step was given: %v", c.untraced/1e6, got.Evidence)
		}
	}
}

// Memory-bound work costs what it would save at the bandwidth a streaming
// kernel reaches (attainableBW of the peak), not at the spec sheet's
// peak, which no kernel moves: the H100 sync scenario's 14.79 ms of
// element-wise work moving 30.9 GB a step at 2.09 TB/s saves 4.55 ms a
// step, not the 5.57 ms the whole 3.35 TB/s promises; work already at the
// attainable bandwidth is no cause.
func TestMemoryBoundAtAttainableBandwidth(t *testing.T) {
	for _, c := range []struct {
		name   string
		gbytes float64
		want   float64
	}{
		{"at 62% of the peak", 6 * 30.9, 14.79e6 - 30.9e9/(0.9*3.35e12)*1e9},
		{"at 95% of the peak", 6 * 47.07, 0},
	} {
		in := oneRank(Recorded{}, -1)
		in.Roles = map[string]report.Role{"memory_bound_ops": {Cause: "memory_bound"}}
		in.Findings = []report.Finding{{RunID: "r", Detector: "memory_bound_ops", Subject: "element-wise",
			Evidence: map[string]any{"gpu_ns": 6 * 14.79e6, "gbytes": c.gbytes, "peak_tbs": 3.35, "calls": 2010.0, "shapes": 45.0,
				"achieved_tbs": c.gbytes / (6 * 14.79e-3) / 1e3, "gpu": "H100-SXM"}}}
		got := causeOf(Judge(in), "memory_bound")
		switch {
		case c.want == 0 && got != nil:
			t.Errorf("%s: %.0f ns a step, want no cause", c.name, got.CostNS)
		case c.want > 0 && (got == nil || math.Abs(got.CostNS-c.want) > 1e3):
			t.Errorf("%s: %+v, want %.0f ns a step", c.name, got, c.want)
		case got != nil && !strings.Contains(got.Headline, "at 90% of it"):
			t.Errorf("%s: headline %q does not say the bandwidth it counts", c.name, got.Headline)
		}
	}
}
