package causes

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// The step-time account (step_account, written by the readers from each
// rank's timeline) as the verdict reads it: every complete step of every
// rank, searched for outliers; the steady steps (complete, in the analysis
// window, not outliers) averaged into what a typical step's time goes to.

// AccountRow is one row of step_account: of one rank's step (its span on
// the GPU timeline, whether it is complete and in the analysis window),
// the time that went to a category, cause and subject (with the call
// stack of its largest stretch, -1 without), in how many stretches, the
// longest.
type AccountRow struct {
	Rank, Step          int
	StartNS, EndNS      int64
	Complete, InWindow  bool
	Cat, Cause, Subject string
	Stack               int32
	NS, Intervals       int64
	LongestNS           int64
}

// accountsOf groups each run's rows into its account, rank by rank in
// step order, its outlier steps marked.
func accountsOf(rows map[string][]AccountRow) map[string]*runAccount {
	out := map[string]*runAccount{}
	type stepKey struct{ rank, step int }
	for run, rs := range rows {
		ra := &runAccount{ranks: map[int][]*acctStep{}}
		out[run] = ra
		seen := map[stepKey]*acctStep{}
		for _, r := range rs {
			k := stepKey{r.Rank, r.Step}
			cur := seen[k]
			if cur == nil {
				cur = &acctStep{rank: r.Rank, step: r.Step, start: r.StartNS, end: r.EndNS, complete: r.Complete, inWin: r.InWindow}
				seen[k] = cur
				ra.ranks[r.Rank] = append(ra.ranks[r.Rank], cur) // rows come in step order
			}
			cur.rows = append(cur.rows, acctRow{cat: r.Cat, cause: r.Cause, subject: r.Subject, stack: r.Stack,
				ns: r.NS, intervals: r.Intervals, longest: r.LongestNS})
		}
		for rank := range ra.ranks {
			ra.markOutliers(rank)
		}
	}
	return out
}

// acctRow is one row of step_account.
type acctRow struct {
	cat, cause, subject string
	stack               int32
	ns, intervals       int64
	longest             int64
}

// key is what the row's time went to: "idle/host/save_checkpoint".
func (a acctRow) key() string { return a.cat + "/" + a.cause + "/" + a.subject }

// acctStep is one step of one rank.
type acctStep struct {
	rank, step      int
	start, end      int64
	complete, inWin bool
	rows            []acctRow
	outlier         bool
}

func (s *acctStep) len() float64 { return float64(s.end - s.start) }

// byKey sums the step's rows by key (or by cat/cause when causeLevel).
func (s *acctStep) byKey(causeLevel bool) map[string]float64 {
	out := map[string]float64{}
	for _, r := range s.rows {
		k := r.key()
		if causeLevel {
			k = r.cat + "/" + r.cause
		}
		out[k] += float64(r.ns)
	}
	return out
}

// runAccount is one run's account, rank by rank in step order.
type runAccount struct {
	ranks map[int][]*acctStep
}

// steady are a rank's steps a typical step is averaged over: complete,
// in the analysis window and not outliers; failing that complete and not
// outliers; failing that all.
func (ra *runAccount) steady(rank int) []*acctStep {
	all := ra.ranks[rank]
	for _, keep := range []func(*acctStep) bool{
		func(s *acctStep) bool { return s.complete && s.inWin && !s.outlier },
		func(s *acctStep) bool { return s.complete && !s.outlier },
		func(*acctStep) bool { return true },
	} {
		var out []*acctStep
		for _, s := range all {
			if keep(s) {
				out = append(out, s)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// medianStep is the median length of the run's steady steps over ranks.
func (ra *runAccount) medianStep() float64 {
	var lens []float64
	for rank := range ra.ranks {
		for _, s := range ra.steady(rank) {
			lens = append(lens, s.len())
		}
	}
	m, _ := MedianMAD(lens)
	return m
}

// Outlier steps: a complete step longer than the rank's median complete
// step by OutlierPct of it, 1 ms, and three robust deviations.
const OutlierPct = 20.0

func (ra *runAccount) markOutliers(rank int) {
	var lens []float64
	for _, s := range ra.ranks[rank] {
		if s.complete {
			lens = append(lens, s.len())
		}
	}
	if len(lens) < 3 {
		return
	}
	med, mad := MedianMAD(lens)
	for _, s := range ra.ranks[rank] {
		if s.complete && s.len()-med >= max(OutlierPct/100*med, 1e6, 3*1.4826*mad) {
			s.outlier = true
		}
	}
	// A step whose idle for one reason grew as much, against that reason's
	// own spread over the rank's other steps, stalled too, though the
	// steps' lengths spread wider (a lean H100 trace: its first steps ran
	// 34-38 ms while the GPU's queue filled, the rest 41-43 ms, and the
	// 12 ms stall's step, 51.9 ms, was inside three deviations of them;
	// its idle with no event recorded was 13.0 ms against 0.8-2.0 ms). The
	// step itself must have grown by half as much: idle that only moved
	// from one reason to another is no stall. And such steps must be
	// fewer than a third of the rank's: a trace whose steps run at two
	// speeds (the lean tiny MLP's: three at 29-30 ms, three at 47-69,
	// untraced all 12-14 ms) has no one-off among them.
	// each candidate step's idle by reason, summed once
	var steps []*acctStep
	var idle []map[string]float64
	for _, s := range ra.ranks[rank] {
		if s.complete && !s.outlier {
			steps = append(steps, s)
			idle = append(idle, s.byKey(true))
		}
	}
	var grew []*acctStep
	for i, s := range steps {
		if d := idleGrew(idle, i); d > 0 && d >= OutlierPct/100*med && s.len()-med >= d/2 {
			grew = append(grew, s)
		}
	}
	if 3*len(grew) < len(lens) {
		for _, s := range grew {
			s.outlier = true
		}
	}
}

// idleGrew is the most one reason's idle (an idle/<cause> key) in step i
// of steps (each a step's time by cat/cause) exceeds its median over the
// other steps, by at least 1 ms and three robust deviations; 0 when none
// does, or fewer than two other steps compare.
func idleGrew(steps []map[string]float64, i int) float64 {
	if len(steps) < 3 {
		return 0
	}
	most := 0.0
	xs := make([]float64, 0, len(steps)-1)
	for k, v := range steps[i] {
		if !strings.HasPrefix(k, "idle/") {
			continue
		}
		xs = xs[:0]
		for j, o := range steps {
			if j != i {
				xs = append(xs, o[k])
			}
		}
		med, mad := MedianMAD(xs)
		if d := v - med; d >= max(1e6, 3*1.4826*mad) {
			most = max(most, d)
		}
	}
	return most
}

// excess is what an outlier step spent beyond a typical step, by key:
// its own time less the median of the rank's other complete steps.
func (ra *runAccount) excess(s *acctStep, causeLevel bool) map[string]float64 {
	var others []map[string]float64
	for _, o := range ra.ranks[s.rank] {
		if o != s && o.complete && !o.outlier {
			others = append(others, o.byKey(causeLevel))
		}
	}
	out := map[string]float64{}
	for k, v := range s.byKey(causeLevel) {
		var xs []float64
		for _, o := range others {
			xs = append(xs, o[k])
		}
		med, _ := MedianMAD(xs)
		if d := v - med; d > 0 {
			out[k] = d
		}
	}
	return out
}

// typical is the run's typical step: per key, the mean over ranks of each
// rank's mean over its steady steps (ns a step), and per key the rank
// where it is largest.
type typical struct {
	perKey map[string]float64
	rankOf map[string]int
	// per key and rank, ns a step: which ranks carry a cost
	perRank map[string]map[int]float64
	steps   int     // steady steps summed, over ranks
	stepNS  float64 // the median steady step
	// a key's row attributes (its stack on the rank where the key costs
	// most: the stack of its largest row there; its intervals and ns summed)
	stack     map[string]int32
	stackNS   map[[2]string]int64 // key and rank -> the largest row's ns
	intervals map[string]int64
	ns        map[string]int64
}

func (ra *runAccount) typical() typical {
	t := typical{perKey: map[string]float64{}, rankOf: map[string]int{}, perRank: map[string]map[int]float64{},
		stack: map[string]int32{}, intervals: map[string]int64{}, ns: map[string]int64{}, stepNS: ra.medianStep()}
	stacks := map[[2]string]int32{}
	t.stackNS = map[[2]string]int64{}
	ranks := slices.Sorted(maps.Keys(ra.ranks))
	for _, rank := range ranks {
		steady := ra.steady(rank)
		t.steps += len(steady)
		sums := map[string]float64{}
		for _, s := range steady {
			for _, r := range s.rows {
				k := r.key()
				sums[k] += float64(r.ns)
				kr := [2]string{k, fmt.Sprint(rank)}
				if old, ok := t.stackNS[kr]; !ok || r.ns > old {
					t.stackNS[kr], stacks[kr] = r.ns, r.stack
				}
				t.intervals[k] += r.intervals
				t.ns[k] += r.ns
			}
		}
		for k, v := range sums {
			per := v / float64(len(steady))
			t.perKey[k] += per / float64(len(ranks))
			if t.perRank[k] == nil {
				t.perRank[k] = map[int]float64{}
			}
			t.perRank[k][rank] = per
			if old, ok := t.rankOf[k]; !ok || per > t.perRank[k][old] {
				t.rankOf[k] = rank
			}
		}
	}
	for k, rank := range t.rankOf {
		t.stack[k] = stacks[[2]string{k, fmt.Sprint(rank)}]
	}
	return t
}

// causeSum is a typical step's time in a category and cause (subjects
// summed), and its subjects, largest first.
func (t typical) causeSum(cat, cause string) (float64, []string) {
	prefix := cat + "/" + cause + "/"
	total := 0.0
	var subs []string
	for k, v := range t.perKey {
		if strings.HasPrefix(k, prefix) {
			total += v
			subs = append(subs, k)
		}
	}
	t.largestFirst(subs)
	return total, subs
}

// largestFirst sorts keys by their time in a typical step, largest first,
// then by name.
func (t typical) largestFirst(keys []string) {
	slices.SortFunc(keys, func(a, b string) int {
		if t.perKey[a] != t.perKey[b] {
			if t.perKey[a] > t.perKey[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
}

// catSum is a typical step's time in a category, every cause summed.
func (t typical) catSum(cat string) float64 {
	total := 0.0
	for k, v := range t.perKey {
		if strings.HasPrefix(k, cat+"/") {
			total += v
		}
	}
	return total
}

// catKeys are a category's keys, largest first.
func (t typical) catKeys(cat string) []string {
	var keys []string
	for k := range t.perKey {
		if strings.HasPrefix(k, cat+"/") {
			keys = append(keys, k)
		}
	}
	t.largestFirst(keys)
	return keys
}

// sumOf sums the steady rows' time and stretches over the keys with a
// prefix.
func (t typical) sumOf(prefix string) (ns, intervals int64) {
	for k, v := range t.ns {
		if strings.HasPrefix(k, prefix) {
			ns += v
			intervals += t.intervals[k]
		}
	}
	return ns, intervals
}

// subjectOf is the subject part of a key.
func subjectOf(key string) string {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[2]
}

// pct is 100 x part / whole, 0 when whole is not positive.
func pct(part, whole float64) float64 {
	if whole <= 0 || math.IsNaN(part) {
		return 0
	}
	return 100 * part / whole
}
