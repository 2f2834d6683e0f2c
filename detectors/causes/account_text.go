package causes

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
)

// accountText is the headline and evidence of a cause from the step-time
// account.
func accountText(c rootCause, t typical) (string, []string) {
	per := fmt.Sprintf("%s a step (%.1f%% of the median step, %s)", mdfmt.Duration(c.CostNS), c.CostPct, mdfmt.Duration(t.stepNS))
	subj := ""
	if c.Subject != "" {
		subj = fmt.Sprintf(" `%s`", c.Subject)
	}
	where := ""
	if c.Stack != "" && c.Stack != c.Subject {
		where = fmt.Sprintf(" (stack: %s)", c.Stack)
	}
	var head string
	if c.rankOutlier {
		head = fmt.Sprintf("rank %d loses %s a step more than its peers (median %s) to %s%s%s, and they wait for it at the collectives",
			*c.Rank, mdfmt.Duration(c.CostNS), mdfmt.Duration(c.peerMedian), rankWhy[c.Why], subj, where)
		return head, []string{t.breakdown()}
	}
	switch c.Kind {
	case "sync":
		head = fmt.Sprintf("synchronizing calls leave the GPU idle %s: the host blocks in%s until the GPU has drained, then the GPU waits for its next launch%s", per, subj, where)
	case "input_bound":
		head = fmt.Sprintf("the input pipeline holds the GPU up: it is idle %s while the thread that launches its work is in the data loader%s%s", per, subj, where)
	case "host_bound":
		head = fmt.Sprintf("host work holds the GPU up: it is idle %s while the host runs%s%s, which launches nothing on the GPU", per, subj, where)
	case "launch_bound":
		head = fmt.Sprintf("the GPU waits for kernel launches: it is idle %s while the host is in launch calls and the operators and Python around them", per)
		if c.Subject != "" {
			head += fmt.Sprintf(" (the most:%s)", subj)
		}
	case "unrecorded_idle":
		head = fmt.Sprintf("the GPU is idle %s while the thread that launches its work is in no event the profiler recorded: host work outside its view (Python without with_stack, another library, the OS)", per)
	case "copies":
		head = fmt.Sprintf("host-device copies hold the GPU up: only copies run %s (the most: %s), with no compute beside them", per, c.Subject)
	case "precision":
		head = fmt.Sprintf("matmuls run in FP32 on the CUDA cores: %s a step (%.0f%% of the GPU span); at the TF32 peak they would take %s (bf16: %s), %s a step less (%.1f%% of the median step)",
			mdfmt.Duration(c.precision[0]*1e6), c.share, mdfmt.Duration(c.precision[1]*1e6), mdfmt.Duration(c.precision[2]*1e6), mdfmt.Duration(c.CostNS), c.CostPct)
	case "one_off_stall":
		head = fmt.Sprintf("rank %d stalled in step %d: it took %s, %s more than the median step (%s); ", *c.Rank, *c.Step, mdfmt.Duration(c.StallNS+t.stepNS), mdfmt.Duration(c.StallNS), mdfmt.Duration(t.stepNS))
		switch c.Why {
		case "input":
			head += fmt.Sprintf("the GPU idled while the data loader ran%s%s", subj, where)
		case "host":
			head += fmt.Sprintf("the GPU idled while the host ran%s%s", subj, where)
		case "sync":
			head += fmt.Sprintf("the GPU idled after a synchronizing call%s%s", subj, where)
		case "launch":
			head += "the GPU idled waiting for launches"
		case "unrecorded":
			head += "the GPU idled while the host was in no recorded event"
		case "copies":
			head += fmt.Sprintf("copies (%s) ran alone", c.Subject)
		default:
			head += "its kernels ran longer"
		}
		if c.firstStep {
			head += "; it is the first step the profiler recorded, which also pays for starting the recording: not the job's stall unless a later step repeats it"
		}
	}
	ev := []string{t.breakdown()}
	if c.Kind == "one_off_stall" {
		ev = append(ev, fmt.Sprintf("in step %d, %s more %s than in the rank's other complete steps", *c.Step, mdfmt.Duration(c.grew), strings.ReplaceAll(c.subjectKey, "/", " ")))
	}
	if c.Stack != "" {
		ev = append(ev, "call stack: "+c.Stack)
	}
	return head, ev
}

// rankWhy names an account cause for a rank outlier's headline.
var rankWhy = map[string]string{
	"sync":   "synchronizing calls that drain its GPU",
	"input":  "its data loader",
	"host":   "host work that launches nothing",
	"launch": "kernel launches",
	"copies": "host-device copies alone on its GPU",
}

// breakdown says where a typical step's time goes.
func (t typical) breakdown() string {
	var parts []string
	add := func(label string, ns float64) {
		if ns >= 0.0005*t.stepNS && ns > 0 {
			parts = append(parts, fmt.Sprintf("%s %s (%.0f%%)", label, mdfmt.Duration(ns), pct(ns, t.stepNS)))
		}
	}
	add("compute", t.catSum("compute"))
	add("exposed communication", t.catSum("comm"))
	add("copies alone", t.catSum("copy"))
	for _, cause := range []string{"sync", "input", "host", "launch", "unrecorded"} {
		v, _ := t.causeSum("idle", cause)
		add("idle in "+map[string]string{"sync": "synchronizing calls", "input": "the data loader", "host": "host work",
			"launch": "launches", "unrecorded": "nothing recorded"}[cause], v)
	}
	return fmt.Sprintf("a typical step, %s (median of %d steady steps): %s", mdfmt.Duration(t.stepNS), t.steps, strings.Join(parts, ", "))
}

// outlierText names every outlier step of every rank and what grew in it.
func (ra *runAccount) outlierText(t typical) []string {
	var out []string
	for _, rank := range slices.Sorted(maps.Keys(ra.ranks)) {
		for _, s := range ra.ranks[rank] {
			if !s.outlier {
				continue
			}
			grew := ra.excess(s, false)
			top := topKey(grew)
			what := ""
			if top != "" {
				what = fmt.Sprintf(": %s more %s", mdfmt.Duration(grew[top]), strings.TrimSuffix(strings.ReplaceAll(top, "/", " "), " "))
			}
			out = append(out, fmt.Sprintf("outlier step: rank %d, step %d took %s against a median of %s%s", rank, s.step, mdfmt.Duration(s.len()), mdfmt.Duration(t.stepNS), what))
		}
	}
	if len(out) > 4 {
		out = append(out[:4], fmt.Sprintf("%d more outlier steps (step_account has every step)", len(out)-4))
	}
	return out
}
