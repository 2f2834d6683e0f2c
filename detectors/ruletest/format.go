package ruletest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/trainscope/trainscope/detectors"
)

// File is one rule-test file: the detectors under test, input rows shared
// by its cases, and the cases.
type File struct {
	Path        string
	Description string
	// Detectors are the detectors under test: every finding they return
	// must be expected.
	Detectors []string
	Audit     bool // they are config-audit rules (RunAudit)
	Run       string
	Tables    []Rows
	Cases     []*Case
}

// Rows are the rows given for one table.
type Rows struct {
	Table string
	Line  int
	Rows  []Row
}

// Row is one input row: its columns and their values, converted to what
// the column holds (int64, float64, string, bool, nil, or a list as JSON).
type Row struct {
	Line int
	Cols []string
	Vals []any
}

// Case is one run of the detectors over the file's rows (and its own).
type Case struct {
	Name       string
	Line       int
	Thresholds map[string]map[string]float64
	Window     detectors.Window
	Tables     []Rows
	Findings   []WantFinding
	Metrics    []WantMetric
	NoFindings []string // detectors that must return nothing
}

// WantFinding is an expected finding; nil fields are not checked.
type WantFinding struct {
	Line     int
	Detector string
	Run      *string
	Rank     *int
	Host     *string
	StepLo   *int
	StepHi   *int
	Subject  *string
	Severity *string
	Metric   *string
	Value    *float64
	Tol      tolerance
	Message  []string // substrings the message must contain
}

// WantMetric is a metric row that must be among the detector's metrics;
// nil fields are not checked.
type WantMetric struct {
	Line     int
	Detector string
	Run      *string
	Rank     *int
	StepLo   *int
	StepHi   *int
	Subject  *string
	Metric   string
	Value    float64
	Tol      tolerance
}

// DefaultRun is the run_id of rows that do not give one.
const DefaultRun = "test"

// Files lists the rule-test files (*.yaml, *.yml) of a folder, sorted.
func Files(dir string) ([]string, error) {
	var out []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no rule-test files (*.yaml)", dir)
	}
	return out, nil
}

// Load reads and checks one rule-test file.
func (s *Suite) Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return s.Parse(path, data)
}

// Parse checks a rule-test file's text; every problem is reported, each
// with file:line.
func (s *Suite) Parse(path string, data []byte) (*File, error) {
	l := &loader{file: path}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Content) != 1 {
		return nil, &LoadError{File: path, Line: 1, Msg: "empty rule-test file"}
	}
	f := &File{Path: path, Run: DefaultRun}
	top, ok := l.mapping(doc.Content[0], "the file", "description", "detectors", "run", "tables", "cases")
	if !ok {
		return nil, l.err()
	}
	if n := top.get("description"); n != nil {
		f.Description, _ = l.str(n, "description")
	}
	if n := top.get("run"); n != nil {
		f.Run, _ = l.str(n, "run")
	}
	if n := top.get("detectors"); n != nil {
		f.Detectors = s.detectorList(l, n, f)
	} else {
		l.fail(top.node, "missing detectors: the detectors under test")
	}
	ranks := map[string]string{} // run/rank -> host, for rows that give no host
	if n := top.get("tables"); n != nil {
		f.Tables = s.tables2(l, n, f.Run, ranks)
	}
	if n := top.get("cases"); n != nil {
		items, _ := l.sequence(n, "cases")
		for _, it := range items {
			if c := s.parseCase(l, it, f, ranks); c != nil {
				f.Cases = append(f.Cases, c)
			}
		}
		if len(items) == 0 {
			l.fail(n, "cases is empty")
		}
	} else {
		l.fail(top.node, "missing cases: what the detectors must find")
	}
	if err := l.err(); err != nil {
		return nil, err
	}
	return f, nil
}

// detectorList reads the detectors under test; they must exist and be all
// trace detectors or all audit rules.
func (s *Suite) detectorList(l *loader, n *yaml.Node, f *File) []string {
	items, _ := l.sequence(n, "detectors")
	var out []string
	kinds := map[bool]bool{}
	for _, it := range items {
		name, ok := l.str(it, "a detector")
		if !ok {
			continue
		}
		d, audit := s.detector(name)
		switch {
		case d == nil:
			l.fail(it, "no detector or audit rule named %q", name)
			continue
		case slices.Contains(out, name):
			l.fail(it, "detector %s listed twice", name)
			continue
		}
		kinds[audit] = true
		f.Audit = audit
		out = append(out, name)
	}
	if len(kinds) > 1 {
		l.fail(n, "detectors mixes trace detectors and config-audit rules: they run over different inputs; use one file for each")
	}
	if len(items) == 0 {
		l.fail(n, "detectors is empty")
	}
	return out
}

func (s *Suite) parseCase(l *loader, n *yaml.Node, f *File, ranks map[string]string) *Case {
	m, ok := l.mapping(n, "a case", "name", "thresholds", "window", "tables", "expect")
	if !ok {
		return nil
	}
	c := &Case{Line: n.Line, Name: fmt.Sprintf("case %d", len(f.Cases)+1)}
	if v := m.get("name"); v != nil {
		c.Name, _ = l.str(v, "name")
	}
	if v := m.get("thresholds"); v != nil {
		c.Thresholds = s.thresholds(l, v)
	}
	if v := m.get("window"); v != nil {
		w, ok := l.mapping(v, "window", "step_lo", "step_hi")
		if ok {
			for _, k := range []string{"step_lo", "step_hi"} {
				if w.get(k) == nil {
					l.fail(v, "window needs step_lo and step_hi (leave window out for the default: every step but the last)")
				}
			}
			c.Window.StepLo, _ = l.integer(w.get("step_lo"), "step_lo")
			c.Window.StepHi, _ = l.integer(w.get("step_hi"), "step_hi")
			c.Window.Set = true
		}
	}
	if v := m.get("tables"); v != nil {
		// the case's rows come after the file's: its hosts are its own
		own := map[string]string{}
		for k, h := range ranks {
			own[k] = h
		}
		c.Tables = s.tables2(l, v, f.Run, own)
	}
	under := map[string]bool{}
	for _, d := range f.Detectors {
		under[d] = true
	}
	v := m.get("expect")
	if v == nil {
		l.fail(n, "case %q has no expect", c.Name)
		return c
	}
	e, ok := l.mapping(v, "expect", "findings", "metrics", "no_findings")
	if !ok {
		return c
	}
	if x := e.get("no_findings"); x != nil {
		for _, name := range l.strs(x, "no_findings") {
			if !under[name] {
				l.fail(x, "no_findings names %q, which is not among the detectors under test (%s)", name, strings.Join(f.Detectors, ", "))
			}
			c.NoFindings = append(c.NoFindings, name)
		}
	}
	if x := e.get("findings"); x != nil {
		items, _ := l.sequence(x, "findings")
		for _, it := range items {
			if w, ok := s.wantFinding(l, it, f); ok {
				if slices.Contains(c.NoFindings, w.Detector) {
					l.fail(it, "a finding of %s is expected, but no_findings says it finds nothing", w.Detector)
				}
				c.Findings = append(c.Findings, w)
			}
		}
	}
	if x := e.get("metrics"); x != nil {
		items, _ := l.sequence(x, "metrics")
		for _, it := range items {
			if w, ok := s.wantMetric(l, it, f); ok {
				c.Metrics = append(c.Metrics, w)
			}
		}
	}
	return c
}

// thresholds reads detector -> threshold -> value; each must exist.
func (s *Suite) thresholds(l *loader, n *yaml.Node) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	m, ok := l.mapping(n, "thresholds")
	if !ok {
		return out
	}
	for _, dn := range m.keys {
		d, _ := s.detector(dn)
		if d == nil {
			l.fail(m.fields[dn].key, "thresholds: no detector or audit rule named %q", dn)
			continue
		}
		pm, ok := l.mapping(m.get(dn), "thresholds of "+dn)
		if !ok {
			continue
		}
		out[dn] = map[string]float64{}
		for _, pn := range pm.keys {
			has := false
			var names []string
			for _, p := range d.Params {
				has = has || p.Name == pn
				names = append(names, p.Name)
			}
			if !has {
				l.fail(pm.fields[pn].key, "%s has no threshold %q (it has: %s)", dn, pn, cmpOr(strings.Join(names, ", "), "none"))
				continue
			}
			if v, ok := l.number(pm.get(pn), dn+"."+pn); ok {
				out[dn][pn] = v
			}
		}
	}
	return out
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// expectedDetector reads an expectation's detector, which may be left out
// when one detector is under test.
func (s *Suite) expectedDetector(l *loader, m mapping, f *File, what string) (string, bool) {
	n := m.get("detector")
	if n == nil {
		if len(f.Detectors) == 1 {
			return f.Detectors[0], true
		}
		l.fail(m.node, "%s needs a detector: more than one is under test", what)
		return "", false
	}
	name, ok := l.str(n, "detector")
	return name, ok
}

func (s *Suite) wantFinding(l *loader, n *yaml.Node, f *File) (WantFinding, bool) {
	m, ok := l.mapping(n, "an expected finding", "detector", "run", "rank", "host", "step", "step_lo", "step_hi",
		"subject", "severity", "metric", "value", "tolerance", "message")
	w := WantFinding{Line: n.Line}
	if !ok {
		return w, false
	}
	w.Detector, ok = s.expectedDetector(l, m, f, "an expected finding")
	if !ok {
		return w, false
	}
	if !slices.Contains(f.Detectors, w.Detector) {
		l.fail(n, "finding of %s: it is not among the detectors under test (%s)", w.Detector, strings.Join(f.Detectors, ", "))
	} else if d, _ := s.detector(w.Detector); d.Kind != detectors.KindFinding {
		l.fail(n, "%s is a metric detector: expect its rows under metrics", w.Detector)
	}
	w.Run = l.optStr(m, "run")
	w.Rank = l.optInt(m, "rank")
	w.Host = l.optStr(m, "host")
	if m.get("step") != nil && m.get("step_lo") != nil {
		l.fail(m.get("step"), "give step (the finding's first step, step_lo) or step_lo, not both")
	}
	w.StepLo = l.optInt(m, "step")
	if w.StepLo == nil {
		w.StepLo = l.optInt(m, "step_lo")
	}
	w.StepHi = l.optInt(m, "step_hi")
	w.Subject = l.optStr(m, "subject")
	w.Severity = l.optStr(m, "severity")
	if w.Severity != nil && !slices.Contains(detectors.Severities, *w.Severity) {
		l.fail(m.get("severity"), "severity %q must be one of %s", *w.Severity, strings.Join(detectors.Severities, ", "))
	}
	w.Metric = l.optStr(m, "metric")
	if v := m.get("value"); v != nil {
		if x, ok := l.number(v, "value"); ok {
			w.Value = &x
		}
	}
	if v := m.get("tolerance"); v != nil {
		if w.Value == nil {
			l.fail(v, "tolerance without a value")
		}
		w.Tol = l.tolerance(v)
	}
	if v := m.get("message"); v != nil {
		w.Message = l.strs(v, "message")
	}
	return w, true
}

func (s *Suite) wantMetric(l *loader, n *yaml.Node, f *File) (WantMetric, bool) {
	m, ok := l.mapping(n, "an expected metric", "detector", "run", "rank", "step_lo", "step_hi", "subject", "metric", "value", "tolerance")
	w := WantMetric{Line: n.Line}
	if !ok {
		return w, false
	}
	if w.Detector, ok = s.expectedDetector(l, m, f, "an expected metric"); !ok {
		return w, false
	}
	if d, _ := s.detector(w.Detector); d == nil {
		l.fail(n, "no detector named %q", w.Detector)
	} else if d.Kind != detectors.KindMetric {
		l.fail(n, "%s is a finding detector: expect its rows under findings", w.Detector)
	}
	w.Run = l.optStr(m, "run")
	w.Rank = l.optInt(m, "rank")
	w.StepLo = l.optInt(m, "step_lo")
	w.StepHi = l.optInt(m, "step_hi")
	w.Subject = l.optStr(m, "subject")
	if v := m.get("metric"); v != nil {
		w.Metric, _ = l.str(v, "metric")
	} else {
		l.fail(n, "an expected metric needs metric (the column's name)")
	}
	if v := m.get("value"); v != nil {
		w.Value, _ = l.number(v, "value")
	} else {
		l.fail(n, "an expected metric needs a value")
	}
	if v := m.get("tolerance"); v != nil {
		w.Tol = l.tolerance(v)
	}
	return w, true
}

func (l *loader) optStr(m mapping, k string) *string {
	n := m.get(k)
	if n == nil {
		return nil
	}
	s, ok := l.str(n, k)
	if !ok {
		return nil
	}
	return &s
}

func (l *loader) optInt(m mapping, k string) *int {
	n := m.get(k)
	if n == nil {
		return nil
	}
	v, ok := l.integer(n, k)
	if !ok {
		return nil
	}
	return &v
}
