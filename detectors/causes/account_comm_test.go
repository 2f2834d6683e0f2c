package causes

import (
	"math"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors/report"
)

// commRun is a run of the given ranks (world size world), six steps each
// of 20 ms of compute and exposed[rank] ms of exposed communication.
func commRun(world int, exposed map[int]float64) Input {
	var ranks []int
	for r := range exposed {
		ranks = append(ranks, r)
	}
	in := Input{Config: defaults,
		Runs:    []report.RunInfo{{RunID: "r", Ranks: ranks, WorldSize: world, GPUActivities: 100, TraceRanks: len(ranks)}},
		Steps:   map[string]StepWindow{"r": {Steps: 6, MedianNS: 30e6}},
		Account: map[string][]AccountRow{},
	}
	for rank, ms := range exposed {
		at := int64(0)
		for step := range 6 {
			end := at + 20e6 + int64(ms*1e6)
			in.Account["r"] = append(in.Account["r"],
				AccountRow{Rank: rank, Step: step + 3, StartNS: at, EndNS: end, Complete: true, InWindow: true,
					Cat: "compute", Cause: "kernels", Stack: -1, NS: 20e6, Intervals: 10, LongestNS: 2e6},
				AccountRow{Rank: rank, Step: step + 3, StartNS: at, EndNS: end, Complete: true, InWindow: true,
					Cat: "comm", Cause: "exposed", Stack: -1, NS: int64(ms * 1e6), Intervals: 4, LongestNS: int64(ms * 1e6 / 4)})
			at = end
		}
	}
	return in
}

// One rank of a data-parallel job traced (a real case: TraceLens' MI300
// ResNet, 1 of 8 ranks, 63% of its step in collectives alone, whose
// verdict named 2.6 ms of memory-bound work first): the communication
// the GPU does not hide is a cause, and it says that part of it may be
// waiting for the untraced ranks. Several ranks traced, the late-rank and
// balanced-run reasoning tells it; under 5% of the step it is no cause.
func TestExposedCommOfOneTracedRank(t *testing.T) {
	for _, c := range []struct {
		name    string
		world   int
		exposed map[int]float64
		want    float64 // ms a step; 0: no cause
		partial bool
	}{
		{"1 of 8 traced", 8, map[int]float64{0: 12}, 12, true},
		{"the job's only rank with NCCL kernels", 1, map[int]float64{0: 9}, 9, false},
		{"under 5% of the step", 8, map[int]float64{0: 1}, 0, false},
		{"several traced", 8, map[int]float64{0: 12, 1: 11, 2: 12, 3: 13}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := causeOf(Judge(commRun(c.world, c.exposed)), kindComm)
			if c.want == 0 {
				if got != nil {
					t.Fatalf("a cause of %.0f ns a step (%s), want none", got.CostNS, got.Headline)
				}
				return
			}
			if got == nil || math.Abs(got.CostNS-c.want*1e6) > 1 {
				t.Fatalf("cause %+v, want %.0f ms a step", got, c.want)
			}
			if p := strings.Contains(got.Headline, "may be waiting for the untraced ranks"); p != c.partial {
				t.Errorf("headline %q: says ranks are untraced: %v, want %v", got.Headline, p, c.partial)
			}
			if !strings.Contains(got.Fix, "overlap") && !strings.Contains(got.Fix, "behind compute") {
				t.Errorf("fix %q", got.Fix)
			}
		})
	}
}
