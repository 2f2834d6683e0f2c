package causes

import (
	"slices"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors/report"
)

// defaults are the causes config's defaults (detectors.DefaultCauses).
var defaults = Thresholds{MinCostPct: 5, MinCostNS: 100e3, MinCostZ: 3, OneOffShare: 0.8, OneOffNS: 10e6}

// lateRun is a run of four ranks, 20 ms steps, in which rank 2 reaches
// every step's all-reduce late by lateNS because its kernels run longer;
// ranks 0, 1 and 3 wait for it. Rank 2's GPU computes slowly (a finding
// that shows compute) and rank 0's GPU idles (a symptom).
func lateRun(lateNS float64, cfg Thresholds) Input {
	in := Input{Config: cfg,
		Runs:  []report.RunInfo{{RunID: "r", Ranks: []int{0, 1, 2, 3}, WorldSize: 4, GPUActivities: 100, TraceRanks: 4}},
		Steps: map[string]StepWindow{"r": {Steps: 5, MedianNS: 20e6}},
		Roles: map[string]report.Role{
			"slow_gpu": {Category: "compute", Shows: []string{"compute"}},
			"gpu_idle": {Category: "utilization", Symptom: "idle"},
		},
		Waiters: map[WaitKey][]report.Waiter{{Run: "r", Rank: 2}: {{Rank: 0, WaitNS: 5 * lateNS}, {Rank: 1, WaitNS: 5 * lateNS}, {Rank: 3, WaitNS: 5 * lateNS}}},
	}
	for step := 1; step <= 5; step++ {
		in.Late = append(in.Late, Late{Run: "r", Comm: "world", Collective: "allreduce", Step: step, Rank: 2,
			Block: lateNS, Seg: 5e6 + lateNS, PeerSeg: 5e6, Compute: lateNS, At: int64(step) * 20e6})
	}
	zero, two := int64(0), int64(2)
	in.Findings = []report.Finding{
		{RunID: "r", Detector: "slow_gpu", Category: "compute", Severity: "warn", Rank: &two, Metric: "m", Message: "rank 2 computes slowly"},
		{RunID: "r", Detector: "gpu_idle", Category: "utilization", Severity: "warn", Rank: &zero, Metric: "m", Message: "rank 0 idles"},
	}
	return in
}

func TestJudge(t *testing.T) {
	for _, c := range []struct {
		name string
		in   Input
		// the headline's kind, cause and words it has; whether balanced
		kind, cause string
		text        []string
		balanced    bool
		// the causes' kinds, and the findings' links (f1's shows, f2's caused_by)
		causes          []string
		shows, causedBy []string
	}{
		{name: "late rank", in: lateRun(2e6, defaults), kind: "late_rank", cause: "c1",
			text:   []string{"Rank 2 delays every step by 2.000 ms (10.0%)", "its kernels run slower than its peers'"},
			causes: []string{"late_rank"}, shows: []string{"c1"}, causedBy: []string{"c1"}},
		// the config's thresholds decide: at 20% of a step rank 2 is no
		// cause, and the run is balanced
		{name: "under min_cost_pct", in: lateRun(2e6, Thresholds{MinCostPct: 20, MinCostNS: 100e3, MinCostZ: 3, OneOffShare: 0.8, OneOffNS: 10e6}),
			kind: "none", balanced: true, text: []string{"Balanced: no rank holds the others up", "(the most, rank 2, 2.000 ms a step, 10.0%: its kernels run slower than its peers')"}},
		{name: "a hiccup under the floor", in: lateRun(50e3, defaults), kind: "none", balanced: true, text: []string{"Balanced"}},
		{name: "memory snapshot alone", in: Input{Config: defaults, Runs: []report.RunInfo{{RunID: "m", Ranks: []int{0}}}},
			kind: "memory_only", text: []string{"A memory snapshot alone"}},
		{name: "no GPU work", in: Input{Config: defaults, Runs: []report.RunInfo{{RunID: "c", Ranks: []int{0}, Events: 7, TraceRanks: 1}}},
			kind: "no_gpu_work", text: []string{"No GPU work in this trace: 7 events"}},
		{name: "one rank, nothing costly", in: Input{Config: defaults, Runs: []report.RunInfo{{RunID: "o", Ranks: []int{0}, Events: 7, TraceRanks: 1, GPUActivities: 3}}},
			kind: "none", text: []string{"No cause costs 5% of a step or more"}},
		// sglang's decode capture (TraceLens): 544 of 546 launches inside
		// hipStreamBeginCapture..EndCapture, two kernels run; its verdict
		// named an 11 us fill_ kernel
		{name: "a graph's capture", in: Input{Config: defaults, Runs: []report.RunInfo{{RunID: "g", Ranks: []int{0}, Events: 7, TraceRanks: 1, GPUActivities: 2}},
			Recorded: map[string]Recorded{"g": {Launches: 546, Captured: 544}}},
			kind: "graph_capture", text: []string{"CUDA graph's capture: 544 of its 546 kernel launches", "replay the graph"}},
		// a job that captures a graph once and replays it in its steps
		{name: "a capture among run steps", in: Input{Config: defaults, Runs: []report.RunInfo{{RunID: "o", Ranks: []int{0}, Events: 7, TraceRanks: 1, GPUActivities: 3}},
			Recorded: map[string]Recorded{"o": {Launches: 5000, Captured: 400}}},
			kind: "none", text: []string{"No cause costs 5% of a step or more"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(c.in.Findings)
			v := Judge(c.in)
			if len(v.Headlines) != 1 {
				t.Fatalf("%d headlines, want 1", len(v.Headlines))
			}
			h := v.Headlines[0]
			if h.Kind != c.kind || h.Cause != c.cause || h.Balanced != c.balanced {
				t.Errorf("headline kind %q cause %q balanced %v, want %q %q %v: %s", h.Kind, h.Cause, h.Balanced, c.kind, c.cause, c.balanced, h.Text)
			}
			for _, w := range c.text {
				if !strings.Contains(h.Text, w) {
					t.Errorf("headline %q lacks %q", h.Text, w)
				}
			}
			var kinds []string
			for _, cs := range v.Causes {
				kinds = append(kinds, cs.Kind)
			}
			if !slices.Equal(kinds, c.causes) {
				t.Errorf("causes %v, want %v", kinds, c.causes)
			}
			if len(v.Findings) != before {
				t.Fatalf("%d findings out of %d", len(v.Findings), before)
			}
			if before > 0 {
				if got := v.Findings[0].Shows; !slices.Equal(got, c.shows) {
					t.Errorf("f1 shows %v, want %v", got, c.shows)
				}
				if got := v.Findings[1].CausedBy; !slices.Equal(got, c.causedBy) {
					t.Errorf("f2 caused by %v, want %v", got, c.causedBy)
				}
				if c.in.Findings[0].ID != "" || c.in.Findings[0].Shows != nil {
					t.Errorf("Judge changed its input's findings: %+v", c.in.Findings[0])
				}
			}
			// the verdict line leads the summary
			if len(v.Summary) == 0 || v.Summary[0].Detector != "verdict" || v.Summary[0].Text != h.Text {
				t.Errorf("summary %+v does not lead with the headline", v.Summary)
			}
		})
	}
}

// TestJudgeEvidence: a finding is read into the cause it is evidence for
// by its detector's role, whatever the detector is called: on rank 2,
// late for its compute, a finding that shows throttle and is evidence for
// a late rank makes the cause's why throttle, with its fix and message;
// without the evidence role it is only a finding that shows the cause.
func TestJudgeEvidence(t *testing.T) {
	for _, evidence := range [][]string{{"late_rank"}, nil} {
		in := lateRun(2e6, defaults)
		in.Roles["hot_gpu"] = report.Role{Category: "hardware", Shows: []string{"throttle"}, Evidence: evidence}
		two := int64(2)
		in.Findings = append(in.Findings, report.Finding{RunID: "r", Detector: "hot_gpu", Category: "hardware", Severity: "warn",
			Rank: &two, Metric: "m", Message: "rank 2's GPU runs hot", Fix: "cool it"})
		v := Judge(in)
		if len(v.Causes) != 1 {
			t.Fatalf("evidence %v: causes %+v, want one", evidence, v.Causes)
		}
		c := v.Causes[0]
		read := c.Why == "throttle" && c.Fix == "cool it" && slices.Contains(c.Evidence, "counters: rank 2's GPU runs hot")
		if want := evidence != nil; read != want || !want && c.Why != "compute" {
			t.Errorf("evidence %v: cause why %q fix %q evidence %q", evidence, c.Why, c.Fix, c.Evidence)
		}
	}
}
