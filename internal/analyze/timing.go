package analyze

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"
)

// detectorProgress says on w that the detectors start, then how many are
// done at most once a second (now is the clock), and when all are.
func detectorProgress(w io.Writer, n, workers int, now func() time.Time) func(done, total int) {
	fmt.Fprintf(w, "running %d detectors, up to %d at a time\n", n, workers)
	start := now()
	last := start
	return func(done, total int) {
		t := now()
		switch {
		case done == total:
			fmt.Fprintf(w, "detectors: %d of %d done in %s\n", done, total, t.Sub(start).Round(time.Millisecond))
		case t.Sub(last) >= time.Second:
			last = t
			fmt.Fprintf(w, "detectors: %d of %d done\n", done, total)
		}
	}
}

// timedStep is how long one detector or shared view took.
type timedStep struct {
	what string
	took time.Duration
}

// printSlowest lists the n slowest of steps and their sum. Detectors that
// ran side by side each count their own time, so the total can exceed
// the wall time.
func printSlowest(w io.Writer, steps []timedStep, n int) {
	var total time.Duration
	for _, s := range steps {
		total += s.took
	}
	slices.SortStableFunc(steps, func(a, b timedStep) int { return cmp.Compare(b.took, a.took) })
	fmt.Fprintf(w, "timing: %d detectors and shared views, %s in all (detectors side by side each count their own time); slowest:", len(steps), total.Round(time.Millisecond))
	for i, s := range steps[:min(n, len(steps))] {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(w, "%s %s %s", sep, s.what, s.took.Round(time.Millisecond))
	}
	fmt.Fprintln(w)
}

// plannedSum adds up the detector queries' planning and executing
// (Set.Planned), whose calls do not overlap.
type plannedSum struct {
	n                   int
	planning, executing time.Duration
}

func (p *plannedSum) add(planning, executing time.Duration) {
	p.n++
	p.planning += planning
	p.executing += executing
}

// print says what DuckDB spent planning the detector queries against
// running them: planning depends on the queries, not on the rows (the
// pass's cost on a trace of a few thousand events).
func (p *plannedSum) print(w io.Writer) {
	if p.n == 0 {
		return
	}
	fmt.Fprintf(w, "timing: %d detector queries: planning %s, executing %s, summed (DuckDB's profile)\n",
		p.n, p.planning.Round(time.Millisecond), p.executing.Round(time.Millisecond))
}
