package causes

import (
	"fmt"
	"slices"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/detectors/report"
)

// buildHeadlines decides each run's verdict sentence: its costliest root
// cause, else why there is none (no GPU work, a memory snapshot alone, the
// ranks balanced), and the lines under it, and puts it first in the
// summary. Renderers print them; they do not decide them.
func (j *judge) buildHeadlines() {
	var summary []report.SummaryLine
	for _, run := range j.runs {
		h := j.headlineOf(run)
		j.headlines = append(j.headlines, h)
		summary = append(summary, report.SummaryLine{RunID: run.RunID, Text: h.Text, Detector: "verdict"})
	}
	j.summary = append(summary, j.summary...)
	// the lines under each headline read every run's headline
	for i := range j.headlines {
		for _, run := range j.runs {
			if run.RunID == j.headlines[i].RunID {
				j.headlines[i].Limiter = j.limiterOf(run.RunID)
				j.headlines[i].Lines = j.verdictLines(run)
			}
		}
	}
}

// traced says what part of the job a run's traces cover, when not all of
// it: "2 of 128 ranks", else "".
func traced(run report.RunInfo) string {
	if run.WorldSize > len(run.Ranks) && len(run.Ranks) > 0 {
		return fmt.Sprintf("%d of %d ranks", len(run.Ranks), run.WorldSize)
	}
	return ""
}

func (j *judge) headlineOf(run report.RunInfo) report.Headline {
	h := report.Headline{RunID: run.RunID, Kind: "none"}
	if r := j.recorded[run.RunID]; r.capture() {
		h.Kind = "graph_capture"
		h.Text = fmt.Sprintf("This trace records a CUDA graph's capture: %.0f of its %.0f kernel launches were made inside a stream capture "+
			"(cudaStreamBeginCapture to EndCapture, hipStream... on ROCm), which records them into a graph and runs none of them, so the GPU idles by construction "+
			"and the causes below describe the capture, not the job's steps; profile steps that replay the graph (cudaGraphLaunch) to see where their time goes",
			r.Captured, r.Launches)
		return h
	}
	for _, c := range j.causes {
		if c.RunID == run.RunID && c.heads() {
			h.Kind, h.Cause, h.CostNS, h.CostPct, h.Fix = c.Kind, c.ID, c.CostNS, c.CostPct, c.Fix
			h.Text = mdfmt.UpperFirst(c.Headline)
			if part := traced(run); part != "" && (c.Kind == "late_rank" || c.Kind == report.KindSlowHost) {
				h.Text = fmt.Sprintf("Of the %s traced: %s", part, c.Headline)
			}
			return h
		}
	}
	switch {
	case run.TraceRanks == 0:
		h.Kind = "memory_only"
		h.Text = "A memory snapshot alone: where step time goes needs a profiler trace of the same rank; the memory findings follow"
		return h
	case run.GPUActivities == 0:
		h.Kind = "no_gpu_work"
		h.Text = fmt.Sprintf("No GPU work in this trace: %d events, none of them a kernel, copy or memset. The profiler recorded the CPU only (add ProfilerActivity.CUDA to torch.profiler's activities), or the job ran on the CPU", run.Events)
		return h
	}
	if len(run.Ranks) > 1 {
		among := ""
		if part := traced(run); part != "" {
			among = fmt.Sprintf(" among the %s traced", part)
		}
		rank, cost := j.costliest(run.RunID)
		p := 0.0
		if j.medianStep[run.RunID] > 0 {
			p = 100 * cost / j.medianStep[run.RunID]
		}
		if rank >= 0 && p >= j.cfg.MinCostPct {
			h.Text = fmt.Sprintf("No single rank%s stands out: the ranks take turns holding each other up (the most, rank %d, %s a step, %.1f%%); what holds them back is what they share", among, rank, mdfmt.Duration(cost), p)
			return h
		}
		h.Balanced = true
		h.Text = fmt.Sprintf("Balanced: no rank%s holds the others up by a noticeable share of the step", among)
		if rank >= 0 {
			h.Text += fmt.Sprintf(" (the most, rank %d, %s a step, %.1f%%", rank, mdfmt.Duration(cost), p)
			if why := j.whys[run.RunID][rank]; why != "" && why != "unknown" && whyText[why] != "" {
				h.Text += ": " + whyText[why]
			}
			h.Text += ")"
		}
		return h
	}
	h.Text = fmt.Sprintf("No cause costs %.0f%% of a step or more", j.cfg.MinCostPct)
	if b := j.breakdowns[run.RunID]; b != "" {
		h.Text += ": " + b
	}
	return h
}

// verdictLines are the lines under a run's headline: what part of the job
// the traces cover, where a typical step goes, the outlier steps, the
// limiter (for runs of several ranks, once waits are set aside), and the
// rest of the summary.
func (j *judge) verdictLines(run report.RunInfo) []string {
	var out []string
	if part := traced(run); part != "" {
		rest := fmt.Sprintf("the other %d are", run.WorldSize-len(run.Ranks))
		if run.WorldSize-len(run.Ranks) == 1 {
			rest = "the other is"
		}
		out = append(out, fmt.Sprintf("traced: %s (%s); %s not in these traces, so whether one of them holds the job up, and how long the traced ranks wait for them at collectives, cannot be told",
			part, mdfmt.RankRanges(run.Ranks), rest))
	}
	if b := j.breakdowns[run.RunID]; b != "" {
		out = append(out, b)
	}
	out = append(out, j.outlierLines[run.RunID]...)
	for _, h := range j.headlines {
		for _, c := range j.causes {
			if h.RunID == run.RunID && c.RunID == run.RunID && c.Kind == "unrecorded_idle" && h.Cause != c.ID && c.CostNS > h.CostNS {
				out = append(out, fmt.Sprintf("more than that, %s a step (%.1f%%), the GPU is idle while the thread that launches its work is in no recorded event: profile with with_stack=True (Python frames) to see what the host does there", mdfmt.Duration(c.CostNS), c.CostPct))
			}
		}
	}
	var top *rootCause
	for i := range j.causes {
		if j.causes[i].RunID == run.RunID && j.causes[i].heads() {
			top = &j.causes[i]
			break
		}
	}
	limiter := j.limiterOf(run.RunID)
	switch {
	case limiter == "":
	case top != nil && slices.Contains([]string{"late_rank", "one_off_stall", report.KindSlowHost, report.KindSlowLink, report.KindHang}, top.Kind) && len(run.Ranks) > 1:
		out = append(out, "once waits for late ranks are set aside, "+limiter)
	case top == nil:
		out = append(out, "the limiter: "+limiter)
	}
	for _, s := range j.summary {
		if s.RunID == run.RunID && !j.isLimiter(s.Detector) && s.Detector != "verdict" {
			out = append(out, s.Text)
		}
	}
	return out
}

// limiterOf is what bounds a run's steps: the message of its (last)
// summary finding (bottleneck_class's), "" when there is none.
func (j *judge) limiterOf(run string) string {
	limiter := ""
	for _, f := range j.findings {
		if f.RunID == run && f.Category == "summary" {
			limiter = f.Message
		}
	}
	return limiter
}

// isLimiter says whether detector's findings are the summary the limiter
// comes from (its category is summary).
func (j *judge) isLimiter(detector string) bool {
	d := j.role(detector)
	return d.Category == "summary"
}

// costliest is the rank that held the others up longest, and how long a
// step (-1 when none did).
func (j *judge) costliest(run string) (int, float64) {
	best, bestV := -1, 0.0
	for rank, v := range j.costs[run] {
		if v > bestV || v == bestV && rank < best {
			best, bestV = rank, v
		}
	}
	return best, bestV
}
