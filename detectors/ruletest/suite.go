package ruletest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/sql/duck"
)

// Suite knows what rule-test files may name: the detectors (built-in, the
// config's folders, the audit rules) and the store's tables and columns.
type Suite struct {
	cfg    detectors.Config
	trace  map[string]*detectors.Detector
	audit  map[string]*detectors.Detector
	tables map[string]*table
	// views maps each view of the schema to the metric detectors and
	// views its SQL reads (gpu_counters_wide reads gpu_counters' metrics)
	views map[string][]string
}

// table is one base table of the schema, as rows may be given for it.
type table struct {
	name   string
	cols   []column
	byName map[string]int
}

type column struct {
	name    string
	typ     string // DuckDB's type name: BIGINT, VARCHAR, INTEGER[] ...
	notNull bool
}

// slicesTable is the name rows of either slices table may be given under:
// each row goes where the ingest would put it (see route).
const slicesTable = "slices"

// refused are tables that the runner fills or that are bookkeeping: rows
// for them would be replaced or mean nothing.
var refused = map[string]string{
	"findings":         "the detectors' output: state it under expect",
	"metrics":          "the detectors' output: state it under expect; the metric detectors a finding reads run with it",
	"root_causes":      "written by reports, not by detectors",
	"analysis_window":  "set by the case's window",
	"audit_gpu":        "filled by the audit run",
	"audit_baselines":  "filled by the audit run",
	"ingested_batches": "ingest bookkeeping",
	"rejected_batches": "ingest bookkeeping",
	"analyses":         "analyze bookkeeping",
	"staged_files":     "store bookkeeping",
}

// NewSuite loads the detectors cfg names (its Dirs: folders of .sql
// detectors of one's own) and reads the schema's tables from an empty
// store.
func NewSuite(ctx context.Context, cfg detectors.Config) (*Suite, error) {
	s := &Suite{cfg: detectors.Config{Dirs: cfg.Dirs}, trace: map[string]*detectors.Detector{},
		audit: map[string]*detectors.Detector{}, tables: map[string]*table{}, views: map[string][]string{}}
	set, err := detectors.NewSet(s.cfg)
	if err != nil {
		return nil, err
	}
	for _, d := range set.Detectors {
		s.trace[d.Name] = d
	}
	au, err := detectors.AuditDetectors()
	if err != nil {
		return nil, err
	}
	for _, d := range au {
		s.audit[d.Name] = d
	}
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	rows, err := st.Query(ctx, `SELECT c.table_name, c.column_name, c.data_type, NOT c.is_nullable
FROM duckdb_columns() c JOIN duckdb_tables() t ON t.table_oid = c.table_oid
WHERE c.schema_name = 'main' AND NOT t.temporary ORDER BY c.table_name, c.column_index`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var tn string
		var c column
		if err := rows.Scan(&tn, &c.name, &c.typ, &c.notNull); err != nil {
			return nil, err
		}
		if _, no := refused[tn]; no {
			continue
		}
		t := s.tables[tn]
		if t == nil {
			t = &table{name: tn, byName: map[string]int{}}
			s.tables[tn] = t
		}
		t.byName[c.name] = len(t.cols)
		t.cols = append(t.cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if s.tables["slices_detail"] == nil || s.tables["slices_core"] == nil {
		return nil, errors.New("ruletest: the schema has no slices_detail or slices_core table")
	}
	if err := s.readViews(ctx, st); err != nil {
		return nil, err
	}
	// slices: the detail table's columns, every core column in it
	d := *s.tables["slices_detail"]
	d.name = slicesTable
	s.tables[slicesTable] = &d
	return s, nil
}

// tableNames lists the tables rows may be given for.
func (s *Suite) tableNames() string {
	var n []string
	for k := range s.tables {
		n = append(n, k)
	}
	slices.Sort(n)
	return strings.Join(n, ", ")
}

// detector finds a detector by name and says whether it is an audit rule.
func (s *Suite) detector(name string) (d *detectors.Detector, audit bool) {
	if d, ok := s.trace[name]; ok {
		return d, false
	}
	if d, ok := s.audit[name]; ok {
		return d, true
	}
	return nil, false
}

// metricsOf and metricTableOf find the metrics of other detectors a
// detector's SQL reads: from the metrics table by detector name, or from
// the detector's own table, metric_<name> (the README catalogue's
// "metrics of" uses the same patterns).
var (
	metricsOf     = regexp.MustCompile(`(?i)detector\s*(?:=|IN\s*\()\s*'([a-z0-9_]+)'`)
	metricTableOf = regexp.MustCompile(`(?i)\b(?:FROM|JOIN)\s+metric_([a-z0-9_]+)`)
)

// metricDeps are the names of the detectors whose metrics sql reads.
func metricDeps(sql string) []string {
	var out []string
	for _, re := range []*regexp.Regexp{metricsOf, metricTableOf} {
		for _, m := range re.FindAllStringSubmatch(sql, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// withDeps returns names and, transitively, the metric detectors their
// SQL reads the metrics of.
func (s *Suite) withDeps(names []string, byName map[string]*detectors.Detector) (map[string]bool, error) {
	need := map[string]bool{}
	var visit func(string) error
	visit = func(n string) error {
		if need[n] {
			return nil
		}
		d, ok := byName[n]
		if !ok {
			return fmt.Errorf("no detector named %q", n)
		}
		need[n] = true
		for _, dep := range s.reads(d.SQL) {
			if dd, ok := byName[dep]; ok && dd.Kind == detectors.KindMetric {
				if err := visit(dep); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, n := range names {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	return need, nil
}

// readViews records what each view of the schema reads: metric detectors
// (by name) and other views.
func (s *Suite) readViews(ctx context.Context, st *duck.Store) error {
	rows, err := st.Query(ctx, "SELECT view_name, sql FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal")
	if err != nil {
		return err
	}
	defer rows.Close()
	text := map[string]string{}
	for rows.Next() {
		var n, q string
		if err := rows.Scan(&n, &q); err != nil {
			return err
		}
		text[n] = q
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for n, q := range text {
		s.views[n] = append(s.views[n], metricDeps(q)...)
		for v := range text {
			if v != n && wordIn(v, q) {
				s.views[n] = append(s.views[n], v)
			}
		}
	}
	return nil
}

// reads lists what sql reads, transitively through the schema's views:
// the names of the detectors whose metrics it reads, and of the views.
func (s *Suite) reads(sql string) []string {
	var out []string
	seen := map[string]bool{}
	var add func(string)
	add = func(n string) {
		if seen[n] {
			return
		}
		seen[n] = true
		out = append(out, n)
		for _, dep := range s.views[n] {
			add(dep)
		}
	}
	for _, m := range metricDeps(sql) {
		add(m)
	}
	for v := range s.views {
		if wordIn(v, sql) {
			add(v)
		}
	}
	return out
}

// wordIn says whether name occurs in text as a whole identifier.
func wordIn(name, text string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		a, b := i+j, i+j+len(name)
		if (a == 0 || !identByte(text[a-1])) && (b == len(text) || !identByte(text[b])) {
			return true
		}
		i = a + 1
	}
}

func identByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
