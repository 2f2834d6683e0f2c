package main

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// finding is the part of a findings row that scoring reads.
type finding struct {
	detector, host, subject string
	rank                    int // -1 when the finding names no rank
}

// analyze loads dir into a fresh in-memory store and runs every built-in
// detector with its default thresholds over the default window (every
// step but the last), as `trainscope analyze` does.
func analyze(ctx context.Context, set *detectors.Set, dir string) ([]finding, []report.Cause, error) {
	// one thread and analyze's memory limit a scenario: with DuckDB's
	// default (80% of the machine's memory for each store), one store per
	// core on a 192-core server would overcommit memory 150 times
	st, err := duck.Open(ctx, "", duck.Options{Threads: 1, MemoryLimit: "512MB"})
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	files, err := ingest.Discover([]string{dir})
	if err != nil {
		return nil, nil, err
	}
	if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: "acc", Rank: -1}); err != nil {
		return nil, nil, err
	}
	rep, err := detectors.Analyze(ctx, st, set, detectors.AnalyzeOptions{})
	if err != nil {
		return nil, nil, err
	}
	// the headline's cause first, then the others (idle the trace cannot
	// explain left out unless it is the headline)
	var causes []report.Cause
	head := ""
	if len(rep.Headline) > 0 {
		head = rep.Headline[0].Cause
	}
	for _, c := range rep.Causes {
		if c.ID == head {
			causes = append([]report.Cause{c}, causes...)
		} else if c.Kind != "unrecorded_idle" {
			causes = append(causes, c)
		}
	}
	rows, err := st.Query(ctx, `SELECT detector, coalesce(rank, -1), coalesce(host, ''), coalesce(subject, '') FROM findings ORDER BY ALL`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var out []finding
	for rows.Next() {
		var f finding
		if err := rows.Scan(&f.detector, &f.rank, &f.host, &f.subject); err != nil {
			return nil, nil, err
		}
		out = append(out, f)
	}
	return out, causes, rows.Err()
}

// scored reports whether a detector's findings count for or against a
// fault type. Other findings (gpu_idle, straggler_rank, comm_exposed_ratio
// ...) describe symptoms that several faults share, so they are tallied
// but not scored.
func scored(detector string) bool {
	for _, t := range faultTypes {
		if string(t) == detector {
			return true
		}
	}
	return false
}

// outcome is one scenario's verdict.
type outcome struct {
	f        Fault
	t        topology
	hit      bool            // the expected detector named the injected place
	fired    bool            // the expected detector fired at all
	partHit  []bool          // per fault of f.parts(): hit
	partFire []bool          // per fault of f.parts(): fired
	both     bool            // two faults: the report's causes name both
	wrong    map[string]bool // fault-type detectors that fired somewhere wrong
	symptoms map[string]int  // unscored findings by detector
	findings []finding
	causes   []report.Cause
	headline headline
}

func score(t topology, f Fault, fds []finding) outcome {
	parts := f.parts()
	o := outcome{f: f, t: t, wrong: map[string]bool{}, symptoms: map[string]int{}, findings: fds,
		partHit: make([]bool, len(parts)), partFire: make([]bool, len(parts))}
	for _, fd := range fds {
		if !scored(fd.detector) {
			o.symptoms[fd.detector]++
			continue
		}
		matched := false
		for i, p := range parts {
			if !p.clean() && fd.detector == string(p.Type) {
				o.partFire[i] = true
				if p.locatedAt(t, fd) {
					o.partHit[i] = true
					matched = true
				}
			}
		}
		if !matched {
			o.wrong[fd.detector] = true
		}
	}
	o.hit, o.fired = o.partHit[0], o.partFire[0]
	return o
}

// missed reports whether a fault of the run went unfound.
func (o outcome) missed() bool {
	if o.f.clean() {
		return false
	}
	for _, h := range o.partHit {
		if !h {
			return true
		}
	}
	return false
}

// tally is one row of the results table.
type tally struct {
	scenarios, tp, fp, fn int
	fired, located        int // for localisation accuracy
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1 // nothing claimed or nothing to find: no error made
	}
	return float64(a) / float64(b)
}

func (x tally) precision() float64 { return ratio(x.tp, x.tp+x.fp) }
func (x tally) recall() float64    { return ratio(x.tp, x.tp+x.fn) }
func (x tally) f1() float64 {
	p, r := x.precision(), x.recall()
	if p+r == 0 {
		return 0
	}
	return 2 * p * r / (p + r)
}

// results aggregates outcomes per fault type. A scenario counts once per
// type: TP when the expected detector named the injected place, FN when it
// did not, and FP for every fault-type detector that named a wrong place
// (another type's detector, any detector on a clean control, or the right
// detector on the wrong rank, host or group).
type results struct {
	byType        map[FaultType]*tally
	cleanRuns     int
	cleanFlagged  int
	symptomsClean map[string]int // unscored detectors: clean runs they fired in
	symptomsFault map[string]int
	faultRuns     int
	misses        []outcome // FN or FP scenarios, for the log
	outs          []outcome // every scenario, for the headline table
}

func newResults() *results {
	r := &results{byType: map[FaultType]*tally{}, symptomsClean: map[string]int{}, symptomsFault: map[string]int{}}
	for _, t := range faultTypes {
		r.byType[t] = &tally{}
	}
	return r
}

func (r *results) add(o outcome) {
	r.outs = append(r.outs, o)
	if o.f.clean() {
		r.cleanRuns++
		if len(o.wrong) > 0 {
			r.cleanFlagged++
		}
		for d := range o.symptoms {
			r.symptomsClean[d]++
		}
	} else {
		r.faultRuns++
		for i, p := range o.f.parts() {
			x := r.byType[p.Type]
			x.scenarios++
			if o.partHit[i] {
				x.tp++
			} else {
				x.fn++
			}
			if o.partFire[i] {
				x.fired++
				if o.partHit[i] {
					x.located++
				}
			}
		}
		for d := range o.symptoms {
			r.symptomsFault[d]++
		}
	}
	for d := range o.wrong {
		r.byType[FaultType(d)].fp++
	}
	if o.missed() || len(o.wrong) > 0 {
		r.misses = append(r.misses, o)
	}
}

func (r *results) overall() tally {
	var all tally
	for _, t := range faultTypes {
		x := r.byType[t]
		all.scenarios += x.scenarios
		all.tp += x.tp
		all.fp += x.fp
		all.fn += x.fn
		all.fired += x.fired
		all.located += x.located
	}
	return all
}

// describe writes one missed or wrong scenario for the log.
func describe(o outcome) string {
	s := fmt.Sprintf("%s (%d ranks): %s;", o.f.Type, o.t.ranks, o.f)
	if !o.headline.right && o.headline.claims != "" { // the real-trace check scores no headline
		s += fmt.Sprintf(" headline wrong (claims %s: %s);", o.headline.claims, o.headline.text)
	}
	if o.missed() {
		s += " missed;"
	}
	if o.f.Also != nil && !o.both {
		s += " causes do not name both;"
	}
	var ws []string
	for d := range o.wrong {
		ws = append(ws, d)
	}
	sort.Strings(ws)
	for _, w := range ws {
		for _, fd := range o.findings {
			if fd.detector == w {
				s += fmt.Sprintf(" %s(rank %d host %q subject %q)", fd.detector, fd.rank, fd.host, fd.subject)
			}
		}
	}
	return s
}

// runScenario generates, analyses and scores one scenario.
func runScenario(ctx context.Context, set *detectors.Set, t topology, f Fault, seed uint64, keep bool) (outcome, error) {
	dir, err := os.MkdirTemp("", "accuracy-*")
	if err != nil {
		return outcome{}, err
	}
	if keep {
		fmt.Fprintf(os.Stderr, "%s: %s\n", dir, f)
	} else {
		defer os.RemoveAll(dir)
	}
	if err := Generate(dir, t, f, seed); err != nil {
		return outcome{}, err
	}
	fds, causes, err := analyze(ctx, set, dir)
	if err != nil {
		return outcome{}, fmt.Errorf("%s (%s): %w", f.Type, dir, err)
	}
	o := score(t, f, fds)
	o.causes = causes
	o.headline = f.headlineClaim(t, causes)
	if f.Also != nil {
		// either fault may lead; the report must name both somewhere
		if h := f.Also.headlineClaim(t, causes); !o.headline.right && h.right {
			o.headline = h
		}
		o.both = true
		for _, p := range f.parts() {
			// a launch overhead on every rank has no rank to name
			named := p.Type == LaunchBound && p.Rank < 0
			for _, c := range causes {
				if p.headlineClaim(t, []report.Cause{c}).right {
					named = true
				}
			}
			o.both = o.both && named
		}
	}
	return o, nil
}
