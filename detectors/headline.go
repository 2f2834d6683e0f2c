package detectors

import (
	"fmt"
	"slices"

	"github.com/trainscope/trainscope/detectors/mdfmt"
)

// buildHeadlines decides each run's verdict sentence: its costliest root
// cause, else why there is none (no GPU work, a memory snapshot alone, the
// ranks balanced), and the lines under it, and puts it first in the
// summary. Renderers print them; they do not decide them.
func (r *Report) buildHeadlines() {
	var summary []SummaryLine
	for _, run := range r.Runs {
		h := r.headlineOf(run)
		r.Headline = append(r.Headline, h)
		summary = append(summary, SummaryLine{RunID: run.RunID, Text: h.Text, Detector: "verdict"})
	}
	r.Summary = append(summary, r.Summary...)
	// the lines under each headline read every run's headline
	for i := range r.Headline {
		for _, run := range r.Runs {
			if run.RunID == r.Headline[i].RunID {
				r.Headline[i].Limiter = r.limiterOf(run.RunID)
				r.Headline[i].Lines = r.verdictLines(run)
			}
		}
	}
}

// traced says what part of the job a run's traces cover, when not all of
// it: "2 of 128 ranks", else "".
func traced(run RunInfo) string {
	if run.WorldSize > len(run.Ranks) && len(run.Ranks) > 0 {
		return fmt.Sprintf("%d of %d ranks", len(run.Ranks), run.WorldSize)
	}
	return ""
}

func (r *Report) headlineOf(run RunInfo) Headline {
	h := Headline{RunID: run.RunID, Kind: "none"}
	for _, c := range r.Causes {
		if c.RunID == run.RunID && c.heads() {
			h.Kind, h.Cause, h.CostNS, h.CostPct, h.Fix = c.Kind, c.ID, c.CostNS, c.CostPct, c.Fix
			h.Text = upperFirst(c.Headline)
			if part := traced(run); part != "" && (c.Kind == "late_rank" || c.Kind == causeSlowHost) {
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
		rank, cost := r.costliest(run.RunID)
		p := 0.0
		if r.medianStep[run.RunID] > 0 {
			p = 100 * cost / r.medianStep[run.RunID]
		}
		if rank >= 0 && p >= r.causes.MinCostPct {
			h.Text = fmt.Sprintf("No single rank%s stands out: the ranks take turns holding each other up (the most, rank %d, %s a step, %.1f%%); what holds them back is what they share", among, rank, mdfmt.Duration(cost), p)
			return h
		}
		h.Balanced = true
		h.Text = fmt.Sprintf("Balanced: no rank%s holds the others up by a noticeable share of the step", among)
		if rank >= 0 {
			h.Text += fmt.Sprintf(" (the most, rank %d, %s a step, %.1f%%", rank, mdfmt.Duration(cost), p)
			if why := r.whys[run.RunID][rank]; why != "" && why != "unknown" && whyText[why] != "" {
				h.Text += ": " + whyText[why]
			}
			h.Text += ")"
		}
		return h
	}
	h.Text = fmt.Sprintf("No cause costs %.0f%% of a step or more", r.causes.MinCostPct)
	if b := r.breakdowns[run.RunID]; b != "" {
		h.Text += ": " + b
	}
	return h
}

// verdictLines are the lines under a run's headline: what part of the job
// the traces cover, where a typical step goes, the outlier steps, the
// limiter (for runs of several ranks, once waits are set aside), and the
// rest of the summary.
func (r *Report) verdictLines(run RunInfo) []string {
	var out []string
	if part := traced(run); part != "" {
		rest := fmt.Sprintf("the other %d are", run.WorldSize-len(run.Ranks))
		if run.WorldSize-len(run.Ranks) == 1 {
			rest = "the other is"
		}
		out = append(out, fmt.Sprintf("traced: %s (%s); %s not in these traces, so whether one of them holds the job up, and how long the traced ranks wait for them at collectives, cannot be told",
			part, mdfmt.RankRanges(run.Ranks), rest))
	}
	if b := r.breakdowns[run.RunID]; b != "" {
		out = append(out, b)
	}
	out = append(out, r.outlierLines[run.RunID]...)
	for _, h := range r.Headline {
		for _, c := range r.Causes {
			if h.RunID == run.RunID && c.RunID == run.RunID && c.Kind == "unrecorded_idle" && h.Cause != c.ID && c.CostNS > h.CostNS {
				out = append(out, fmt.Sprintf("more than that, %s a step (%.1f%%), the GPU is idle while the thread that launches its work is in no recorded event: profile with with_stack=True (Python frames) to see what the host does there", mdfmt.Duration(c.CostNS), c.CostPct))
			}
		}
	}
	var top *Cause
	for i := range r.Causes {
		if r.Causes[i].RunID == run.RunID && r.Causes[i].heads() {
			top = &r.Causes[i]
			break
		}
	}
	limiter := r.limiterOf(run.RunID)
	switch {
	case limiter == "":
	case top != nil && slices.Contains([]string{"late_rank", "one_off_stall", causeSlowHost, causeSlowLink, causeHang}, top.Kind) && len(run.Ranks) > 1:
		out = append(out, "once waits for late ranks are set aside, "+limiter)
	case top == nil:
		out = append(out, "the limiter: "+limiter)
	}
	for _, s := range r.Summary {
		if s.RunID == run.RunID && !r.isLimiter(s.Detector) && s.Detector != "verdict" {
			out = append(out, s.Text)
		}
	}
	return out
}

// limiterOf is what bounds a run's steps: the message of its (last)
// summary finding (bottleneck_class's), "" when there is none.
func (r *Report) limiterOf(run string) string {
	limiter := ""
	for _, f := range r.Findings {
		if f.RunID == run && f.Category == "summary" {
			limiter = f.Message
		}
	}
	return limiter
}

// isLimiter says whether detector's findings are the summary the limiter
// comes from (its category is summary).
func (r *Report) isLimiter(detector string) bool {
	d := r.detector(detector)
	return d != nil && d.Category == "summary"
}
