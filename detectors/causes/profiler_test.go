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

// A host-side cause that would not cost enough had every recorded event
// cost profilerEventHighNS is unsure: it is listed after the causes that
// are sure, whatever it costs, and its headline says it may be the
// profiler's; one that survives that estimate, or whose run has its
// untraced step given, keeps its place by cost.
func TestUnsureHostCauseAfterSureOnes(t *testing.T) {
	for _, c := range []struct {
		name     string
		rec      Recorded
		untraced float64
		unsure   bool
	}{
		// 5,180 events: 10.4 ms taken off at 2 us, 23.8 of the 26 ms at 4.6 us
		{"the profiler could be all of it", Recorded{Ops: 4400, Calls: 780}, 0, true},
		// 1,000 events: 4.6 ms at the most, 14 ms of launch idle left
		{"more than the profiler could cost", Recorded{Ops: 1000}, 0, false},
		// measured, not estimated: 8 ms comes off, 11.8 ms left
		{"untraced step given", Recorded{Ops: 4400, Calls: 780}, 45e6, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := oneRank(c.rec, -1)
			in.Config.UntracedStepNS = c.untraced
			// element-wise work at 62% of the peak bandwidth: 4.54 ms a step
			in.Roles = map[string]report.Role{"memory_bound_ops": {Cause: "memory_bound"}}
			in.Findings = []report.Finding{{RunID: "r", Detector: "memory_bound_ops", Subject: "element-wise",
				Evidence: map[string]any{"gpu_ns": 6 * 14.79e6, "gbytes": 6 * 30.9, "peak_tbs": 3.35, "calls": 2010.0, "shapes": 45.0,
					"achieved_tbs": 30.9 / 14.79e-3 / 1e3, "gpu": "H100-SXM"}}}
			v := Judge(in)
			launch, mem := causeOf(v, "launch_bound"), causeOf(v, "memory_bound")
			if launch == nil || mem == nil {
				t.Fatalf("causes %+v: want launch-bound and memory-bound", v.Causes)
			}
			if launch.CostNS <= mem.CostNS {
				t.Fatalf("launch-bound %.0f ns a step, memory-bound %.0f: the case wants launch to cost more", launch.CostNS, mem.CostNS)
			}
			first := v.Causes[0].Kind
			if c.unsure && first != "memory_bound" || !c.unsure && first != "launch_bound" {
				t.Errorf("first cause %s, want %s (causes %+v)", first, map[bool]string{true: "memory_bound", false: "launch_bound"}[c.unsure], v.Causes)
			}
			if said := strings.Contains(launch.Headline, "could be nearly all the profiler's"); said != c.unsure {
				t.Errorf("launch-bound headline %q: says it may be the profiler's: %v, want %v", launch.Headline, said, c.unsure)
			}
		})
	}
}

// stepsRun is a run of one rank whose steps each hold computeMS of
// compute and the given idle (ms) waiting for launches and in nothing
// recorded.
func stepsRun(computeMS float64, launchMS, unrecordedMS []float64) Input {
	in := Input{Config: defaults,
		Runs:    []report.RunInfo{{RunID: "r", Ranks: []int{0}, WorldSize: 1, GPUActivities: 100, TraceRanks: 1}},
		Steps:   map[string]StepWindow{"r": {Steps: len(launchMS)}},
		Account: map[string][]AccountRow{},
	}
	at := int64(0)
	for i := range launchMS {
		rows := []struct {
			cat, cause string
			ms         float64
		}{{"compute", "kernels", computeMS}, {"idle", "launch", launchMS[i]}, {"idle", "unrecorded", unrecordedMS[i]}}
		end := at + int64((computeMS+launchMS[i]+unrecordedMS[i])*1e6)
		for _, r := range rows {
			ns := int64(r.ms * 1e6)
			in.Account["r"] = append(in.Account["r"], AccountRow{Rank: 0, Step: i + 3, StartNS: at, EndNS: end, Complete: true, InWindow: true,
				Cat: r.cat, Cause: r.cause, Subject: "", Stack: -1, NS: ns, Intervals: 1, LongestNS: ns})
		}
		at = end
	}
	return in
}

// A one-off stall shows in the idle that grew in its step even where the
// steps' lengths spread too wide for the step-length rule (the lean H100
// weak_stall trace: 12 ms of unrecorded host work in one step, its first
// steps short while the GPU's queue filled). Steps that run at two speeds
// hold no one-off, nor does a step whose idle only moved from one reason
// to another.
func TestStallByWhatGrew(t *testing.T) {
	for _, c := range []struct {
		name              string
		compute           float64
		launch, unrecorde []float64
		stallStep         int // 0: none
		stallMS           float64
	}{
		{"weak stall", 27, []float64{6.7, 9.8, 11.9, 12.8, 14.3, 14.4}, []float64{0.8, 1.1, 13.0, 1.7, 2.0, 2.0}, 5, 10.4},
		{"two speeds", 1.5, []float64{25.3, 24.8, 42.1, 64.4, 50.1, 25.3}, []float64{3, 3, 3, 3, 3, 3}, 0, 0},
		{"moved, not grown", 27, []float64{14, 14.2, 3, 14.1, 13.9, 14}, []float64{2, 1.9, 13, 2.1, 2, 2}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(stepsRun(c.compute, c.launch, c.unrecorde))
			stall := causeOf(v, "one_off_stall")
			switch {
			case c.stallStep == 0 && stall != nil:
				t.Errorf("a stall in step %d: %s", *stall.Step, stall.Headline)
			case c.stallStep > 0 && stall == nil:
				t.Fatalf("no stall among %+v", v.Causes)
			case c.stallStep > 0:
				if *stall.Step != c.stallStep || stall.Why != "unrecorded" || math.Abs(stall.StallNS-c.stallMS*1e6) > 0.05e6 {
					t.Errorf("stall in step %d, why %s, %.2f ms; want step %d, unrecorded, %.2f ms", *stall.Step, stall.Why, stall.StallNS/1e6, c.stallStep, c.stallMS)
				}
			}
		})
	}
}
