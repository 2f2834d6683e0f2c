package ruletest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/sql/duck"
)

// Result is the outcome of one case.
type Result struct {
	File     string
	Case     string
	Line     int
	Problems []string  // empty: the case passed
	Want     []string  // the expected findings, one line each
	Got      []Finding // what the detectors under test found
}

// Failed says whether the case found problems.
func (r Result) Failed() bool { return len(r.Problems) > 0 }

// Report is the case's outcome as text: each problem, then the expected
// and the actual findings side by side.
func (r Result) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: %s: ", r.File, r.Line, r.Case)
	if !r.Failed() {
		b.WriteString("ok\n")
		return b.String()
	}
	fmt.Fprintf(&b, "%d problem(s)\n", len(r.Problems))
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "  %s\n", strings.ReplaceAll(p, "\n", "\n  "))
	}
	b.WriteString("  expected findings:\n")
	if len(r.Want) == 0 {
		b.WriteString("    (none)\n")
	}
	for _, w := range r.Want {
		fmt.Fprintf(&b, "    %s\n", w)
	}
	b.WriteString("  got findings:\n")
	if len(r.Got) == 0 {
		b.WriteString("    (none)\n")
	}
	for _, g := range r.Got {
		fmt.Fprintf(&b, "    %s\n", g)
	}
	return b.String()
}

// Run runs every case of f, each on a fresh in-memory store. The error is
// for a case that could not run at all (its rows refused by the store);
// mismatches are in the results.
func (s *Suite) Run(ctx context.Context, f *File) ([]Result, error) {
	var out []Result
	for _, c := range f.Cases {
		r, err := s.runCase(ctx, f, c)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *Suite) runCase(ctx context.Context, f *File, c *Case) (Result, error) {
	res := Result{File: f.Path, Case: c.Name, Line: c.Line}
	for _, w := range c.Findings {
		res.Want = append(res.Want, w.String())
	}
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		return res, err
	}
	defer st.Close()
	for _, rs := range append(slices.Clone(f.Tables), c.Tables...) {
		for _, r := range rs.Rows {
			if err := s.insert(ctx, st, rs.Table, r); err != nil {
				return res, &LoadError{File: f.Path, Line: r.Line, Msg: fmt.Sprintf("row of %s: %v", rs.Table, err)}
			}
		}
	}
	cfg := s.cfg
	cfg.Thresholds = c.Thresholds
	run := slices.Clone(f.Detectors)
	for _, m := range c.Metrics {
		if !slices.Contains(run, m.Detector) {
			run = append(run, m.Detector)
		}
	}
	var results []detectors.Result
	if f.Audit {
		set, err := detectors.NewAuditSet(cfg)
		if err != nil {
			return res, fmt.Errorf("%s: %w", f.Path, err)
		}
		set.Detectors = slices.DeleteFunc(set.Detectors, func(d *detectors.Detector) bool { return !slices.Contains(run, d.Name) })
		results, err = set.RunAudit(ctx, st, detectors.AuditOptions{})
		if err != nil {
			return res, fmt.Errorf("%s: %w", f.Path, err)
		}
	} else {
		set, err := detectors.NewSet(cfg)
		if err != nil {
			return res, fmt.Errorf("%s: %w", f.Path, err)
		}
		byName := map[string]*detectors.Detector{}
		for _, d := range set.Detectors {
			byName[d.Name] = d
		}
		need, err := s.withDeps(run, byName)
		if err != nil {
			return res, fmt.Errorf("%s: %w", f.Path, err)
		}
		set.Detectors = slices.DeleteFunc(set.Detectors, func(d *detectors.Detector) bool { return !need[d.Name] })
		if err := detectors.SetWindow(ctx, st, c.Window); err != nil {
			return res, err
		}
		results, err = set.Run(ctx, st)
		detectors.ReleaseShared(ctx, st)
		if err != nil {
			return res, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	for _, r := range results {
		if r.Err != nil {
			res.Problems = append(res.Problems, fmt.Sprintf("detector %s failed: %v", r.Detector.Name, r.Err))
		}
	}
	got, err := findings(ctx, st, f.Detectors)
	if err != nil {
		return res, err
	}
	res.Got = got
	res.Problems = append(res.Problems, CompareFindings(c.Findings, got)...)
	if len(c.Metrics) > 0 {
		ms, err := metrics(ctx, st)
		if err != nil {
			return res, err
		}
		res.Problems = append(res.Problems, CompareMetrics(c.Metrics, ms)...)
	}
	return res, nil
}

// route says which slices table a row of slices goes to: the detail table
// for GPU work and any row with a detail column, as the ingest does.
func route(r Row, core *table) string {
	for i, c := range r.Cols {
		if c == "kind" {
			switch r.Vals[i] {
			case "kernel", "comm", "memcpy", "memset", "gpu_annotation":
				return "slices_detail"
			}
		}
		if _, ok := core.byName[c]; !ok && r.Vals[i] != nil {
			return "slices_detail"
		}
	}
	return "slices_core"
}

func (s *Suite) insert(ctx context.Context, st *duck.Store, tableName string, r Row) error {
	if tableName == slicesTable {
		core := s.tables["slices_core"]
		tableName = route(r, core)
		if tableName == core.name {
			// the detail columns it has are null: the core table lacks them
			var kept Row
			for i, c := range r.Cols {
				if _, ok := core.byName[c]; ok {
					kept.Cols, kept.Vals = append(kept.Cols, c), append(kept.Vals, r.Vals[i])
				}
			}
			r = kept
		}
	}
	cols := make([]string, len(r.Cols))
	ph := make([]string, len(r.Cols))
	args := make([]any, len(r.Cols))
	for i, c := range r.Cols {
		cols[i] = `"` + c + `"`
		args[i] = r.Vals[i]
		ph[i] = "?"
		if l, ok := r.Vals[i].(jsonList); ok {
			args[i] = l.json
			ph[i] = "CAST(CAST(? AS JSON) AS " + l.typ + ")"
		}
	}
	q := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", tableName, strings.Join(cols, ", "), strings.Join(ph, ", "))
	return st.Exec(ctx, q, args...)
}
