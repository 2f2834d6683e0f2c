package causes

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/trainscope/trainscope/detectors/report"
)

// Thresholds are the cause graph's (the config's causes section, as
// detectors.CausesConfig holds it): a rank is a root cause when the
// critical path through the collectives runs on it alone for at least
// MinCostPct of the median step and MinCostNS, and its cost stands out
// from the other ranks' by a robust z-score of MinCostZ; a stall is
// one-off when one step holds OneOffShare of a rank's cost and at least
// OneOffNS. Every other cause must cost MinCostPct and MinCostNS a step
// too, and the verdict calls a run of several ranks balanced below
// MinCostPct.
type Thresholds struct {
	MinCostPct  float64
	MinCostNS   float64
	MinCostZ    float64
	OneOffShare float64
	OneOffNS    float64
	// UntracedStepNS is the step time without the profiler (0: not known)
	UntracedStepNS float64
}

// StepWindow is a run's analysed steps and their median duration.
type StepWindow struct {
	Steps    int
	MedianNS float64
}

// WaitKey is a late rank of a run.
type WaitKey struct {
	Run  string
	Rank int
}

// StackKey is a call stack of a run's rank (the stacks table's stack_id).
type StackKey struct {
	Run   string
	Rank  int
	Stack int32
}

// Input is everything the causes and the verdict are judged from, as the
// loader read it: the runs, their findings (in the report's order) and
// metric tables, the detectors' roles, each run's analysed steps, the
// collective instances ranks arrived at last (Late) and who waited for
// them (Waiters), the step-time account's rows, and the call stacks the
// account's causes may name (StacksWanted says which).
type Input struct {
	Config   Thresholds
	Runs     []report.RunInfo
	Findings []report.Finding
	Metrics  []report.MetricTable
	Roles    map[string]report.Role
	Steps    map[string]StepWindow
	Late     []Late
	Waiters  map[WaitKey][]report.Waiter
	// Account is each run's step_account rows, in order of run, rank,
	// step start
	Account map[string][]AccountRow
	// Stacks are call stacks as frames from the outermost, the last few
	Stacks map[StackKey]string
	// Recorded is each run's host events the profiler recorded in a
	// typical analysed step (mean over its ranks): the profiler's own cost
	// on the host grows with them
	Recorded map[string]Recorded
}

// Recorded counts the host events torch.profiler recorded in a run's
// typical analysed step: operators, runtime and driver calls, and Python
// frames (with_stack=True), each a mean over its ranks.
type Recorded struct {
	Ops, Calls, Python float64
	// Launches and Captured count the whole trace's kernel and copy launch
	// calls and those made inside a stream capture (between a
	// cudaStreamBeginCapture and its EndCapture on the same thread), which
	// record a CUDA graph and run nothing; summed over the run's ranks
	Launches, Captured float64
}

// capture says whether a run's trace is mostly a CUDA graph's capture:
// most of its launches (and at least minCaptured) ran nothing.
func (r Recorded) capture() bool {
	return r.Captured >= minCaptured && 2*r.Captured >= r.Launches
}

// minCaptured is how many captured launches make a trace a capture's.
const minCaptured = 10

// Events is every recorded host event of the step.
func (r Recorded) Events() float64 { return r.Ops + r.Calls + r.Python }

// Verdict is what Judge decides: the findings numbered and linked to the
// causes they show or are explained by, the root causes costliest first
// (each run's in turn), each run's headline (with the lines under it,
// whether it is balanced and what limits it), the summary and the
// recommendations; and per run, key and rank what a typical step spends
// (the account's), which the charts draw.
type Verdict struct {
	Findings        []report.Finding
	Causes          []report.Cause
	Headlines       []report.Headline
	Summary         []report.SummaryLine
	Recommendations []report.Recommendation
	PerRank         map[string]map[string]map[int]float64
}

// judge is one Judge call's state.
type judge struct {
	cfg      Thresholds
	runs     []report.RunInfo
	findings []report.Finding
	metrics  []report.MetricTable
	roles    map[string]report.Role
	steps    map[string]StepWindow
	stacks   map[StackKey]string
	recorded map[string]Recorded

	causes          []rootCause
	headlines       []report.Headline
	summary         []report.SummaryLine
	recommendations []report.Recommendation

	costs      map[string]map[int]float64 // per run and rank: the step time it held up (a typical step)
	whys       map[string]map[int]string  // per run and rank: what mostly made it late (whyText's keys)
	medianStep map[string]float64         // per run: the median step time
	// per run, from the step-time account: where a typical step goes, and
	// the outlier steps
	breakdowns   map[string]string
	outlierLines map[string][]string
	// per run, rank and account key ("idle/sync/aten::item"): ns a
	// typical step
	acctPerRank map[string]map[string]map[int]float64
}

// Judge finds the root causes of each run's lost step time, links the
// findings they explain, and decides each run's verdict. It reads nothing
// but in, and leaves in as it was.
func Judge(in Input) Verdict {
	j := &judge{cfg: in.Config, runs: in.Runs, findings: slices.Clone(in.Findings), metrics: in.Metrics,
		roles: in.Roles, steps: in.Steps, stacks: in.Stacks, recorded: in.Recorded}
	j.buildCauses(in)
	j.buildSummary()
	j.buildHeadlines()
	j.buildRecommendations()
	v := Verdict{Findings: j.findings, Headlines: j.headlines, Summary: j.summary,
		Recommendations: j.recommendations, PerRank: j.acctPerRank}
	for _, c := range j.causes {
		v.Causes = append(v.Causes, c.Cause)
	}
	return v
}

// buildCauses finds the root causes of each run's lost step time and links
// the findings they explain.
func (j *judge) buildCauses(in Input) {
	accounts := accountsOf(in.Account)
	for i := range j.findings {
		j.findings[i].ID = fmt.Sprintf("f%d", i+1)
	}
	j.medianStep = map[string]float64{}
	for _, run := range j.runs {
		sw := in.Steps[run.RunID]
		j.medianStep[run.RunID] = sw.MedianNS
		var causes []rootCause
		causes = append(causes, j.lateCauses(run.RunID, in.Late, sw, in.Waiters)...)
		causes = append(causes, j.findingCauses(run.RunID, sw)...)
		causes = mergeSlowHost(j, run.RunID, causes, sw)
		causes = append(causes, j.accountCauses(run.RunID, accounts[run.RunID], causes)...)
		j.hardwareCauses(run.RunID, causes)
		// costliest first; idle the trace cannot explain comes after every
		// cause it can (the verdict names what is known, and says when the
		// unknown costs more), and in short stretches never heads at all; a
		// stall in the first recorded step comes after the known causes too,
		// and so does a host-side cause the profiler's cost may be all of
		slices.SortStableFunc(causes, func(a, b rootCause) int {
			return cmp.Or(cmp.Compare(boolInt(a.last()), boolInt(b.last())),
				cmp.Compare(boolInt(a.unsure), boolInt(b.unsure)), cmp.Compare(b.CostNS, a.CostNS))
		})
		for i := range causes {
			causes[i].ID = fmt.Sprintf("c%d", len(j.causes)+i+1)
		}
		j.linkFindings(run.RunID, causes, in.Waiters)
		j.causes = append(j.causes, causes...)
	}
}

// role is a detector's role by name (the zero Role for a detector the
// input does not know: it shows nothing).
func (j *judge) role(name string) role { return role(j.roles[name]) }

// role is a detector's place in the cause graph.
type role report.Role

// shows says whether d's findings show what (a kind of cause, a cause
// model or a reason).
func (d role) shows(what string) bool {
	return what != "" && (d.Cause == what || slices.Contains(d.Shows, what))
}

// causeModel is d's cause header.
func (d role) causeModel() string { return d.Cause }

// symptom is d's symptom header.
func (d role) symptom() string { return d.Symptom }

// evidenceFor says whether d's findings are evidence for a cause of kind
// (its evidence header).
func (d role) evidenceFor(kind string) bool { return slices.Contains(d.Evidence, kind) }

// StacksWanted are the call stacks of each run (rank and stack id) that
// Judge may name from the account rows: the stack of each idle cause's
// costliest subject, and every stack in an outlier step. The loader reads
// them into Input.Stacks.
func StacksWanted(account map[string][]AccountRow) map[string][][2]int {
	out := map[string][][2]int{}
	for run, ra := range accountsOf(account) {
		want := map[[2]int]bool{}
		t := ra.typical()
		for _, cause := range []string{"sync", "input", "host", "launch", "unrecorded"} {
			if _, subs := t.causeSum("idle", cause); len(subs) > 0 && t.stack[subs[0]] >= 0 {
				want[[2]int{t.rankOf[subs[0]], int(t.stack[subs[0]])}] = true
			}
		}
		for rank, steps := range ra.ranks {
			for _, s := range steps {
				for _, row := range s.rows {
					if s.outlier && row.stack >= 0 {
						want[[2]int{rank, int(row.stack)}] = true
					}
				}
			}
		}
		if len(want) > 0 {
			out[run] = slices.SortedFunc(maps.Keys(want), func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
		}
	}
	return out
}
