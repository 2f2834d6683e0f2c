package ruletest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/trainscope/trainscope/sql/duck"
)

// Finding is one row of findings, as a rule test compares it.
type Finding struct {
	Run, Detector, Severity string
	Rank, StepLo, StepHi    *int
	Host, Subject           *string
	Metric                  string
	Value                   *float64
	Message                 string
}

// MetricRow is one row of metrics.
type MetricRow struct {
	Run, Detector  string
	Rank           *int
	StepLo, StepHi *int
	Subject        *string
	Metric         string
	Value          *float64
}

func findings(ctx context.Context, st *duck.Store, names []string) ([]Finding, error) {
	ph := strings.TrimSuffix(strings.Repeat("?, ", len(names)), ", ")
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	rows, err := st.Query(ctx, `SELECT run_id, detector, severity, rank, step_lo, step_hi, host, subject, metric, value, message
FROM findings WHERE detector IN (`+ph+`) ORDER BY detector, run_id, rank NULLS FIRST, step_lo NULLS FIRST, subject NULLS FIRST, metric, value, message`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Finding
	for rows.Next() {
		var f Finding
		var rank, lo, hi sql.NullInt64
		var host, subject sql.NullString
		var v sql.NullFloat64
		if err := rows.Scan(&f.Run, &f.Detector, &f.Severity, &rank, &lo, &hi, &host, &subject, &f.Metric, &v, &f.Message); err != nil {
			return nil, err
		}
		f.Rank, f.StepLo, f.StepHi = intp(rank), intp(lo), intp(hi)
		f.Host, f.Subject, f.Value = strp(host), strp(subject), floatp(v)
		out = append(out, f)
	}
	return out, rows.Err()
}

func metrics(ctx context.Context, st *duck.Store) ([]MetricRow, error) {
	rows, err := st.Query(ctx, `SELECT run_id, detector, rank, step_lo, step_hi, subject, metric, value FROM metrics ORDER BY ALL`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []MetricRow
	for rows.Next() {
		var m MetricRow
		var rank, lo, hi sql.NullInt64
		var subject sql.NullString
		var v sql.NullFloat64
		if err := rows.Scan(&m.Run, &m.Detector, &rank, &lo, &hi, &subject, &m.Metric, &v); err != nil {
			return nil, err
		}
		m.Rank, m.StepLo, m.StepHi, m.Subject, m.Value = intp(rank), intp(lo), intp(hi), strp(subject), floatp(v)
		out = append(out, m)
	}
	return out, rows.Err()
}

func intp(v sql.NullInt64) *int {
	if !v.Valid {
		return nil
	}
	i := int(v.Int64)
	return &i
}

func strp(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	return &v.String
}

func floatp(v sql.NullFloat64) *float64 {
	if !v.Valid {
		return nil
	}
	return &v.Float64
}

// String is the finding on one line.
func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", f.Detector, f.Severity)
	if f.Run != DefaultRun {
		fmt.Fprintf(&b, " run=%s", f.Run)
	}
	optInt(&b, "rank", f.Rank)
	optStr(&b, "host", f.Host)
	optInt(&b, "step", f.StepLo)
	if f.StepHi != nil && (f.StepLo == nil || *f.StepHi != *f.StepLo) {
		optInt(&b, "step_hi", f.StepHi)
	}
	optStr(&b, "subject", f.Subject)
	fmt.Fprintf(&b, " %s=%s message=%q", f.Metric, num(f.Value), f.Message)
	return b.String()
}

// String is the expectation on one line, as the finding it wants.
func (w WantFinding) String() string {
	var b strings.Builder
	b.WriteString(w.Detector)
	if w.Severity != nil {
		b.WriteString(" " + *w.Severity)
	}
	optStr(&b, "run", w.Run)
	optInt(&b, "rank", w.Rank)
	optStr(&b, "host", w.Host)
	optInt(&b, "step", w.StepLo)
	optInt(&b, "step_hi", w.StepHi)
	optStr(&b, "subject", w.Subject)
	m := "value"
	if w.Metric != nil {
		m = *w.Metric
	}
	if w.Value != nil {
		fmt.Fprintf(&b, " %s=%s%s", m, num(w.Value), w.Tol)
	} else if w.Metric != nil {
		fmt.Fprintf(&b, " metric=%s", m)
	}
	for _, s := range w.Message {
		fmt.Fprintf(&b, " message~%q", s)
	}
	fmt.Fprintf(&b, " (line %d)", w.Line)
	return b.String()
}

func optInt(b *strings.Builder, k string, v *int) {
	if v != nil {
		fmt.Fprintf(b, " %s=%d", k, *v)
	}
}

func optStr(b *strings.Builder, k string, v *string) {
	if v != nil {
		fmt.Fprintf(b, " %s=%q", k, *v)
	}
}

func num(v *float64) string {
	if v == nil {
		return "NULL"
	}
	return fmt.Sprintf("%.6g", *v)
}

// diffs lists how g differs from w; empty when it matches.
func (w WantFinding) diffs(g Finding) []string {
	var d []string
	if w.Detector != g.Detector {
		return []string{"detector"}
	}
	str := func(k string, want *string, got string) {
		if want != nil && *want != got {
			d = append(d, fmt.Sprintf("%s: want %q, got %q", k, *want, got))
		}
	}
	strN := func(k string, want, got *string) {
		if want != nil && (got == nil || *want != *got) {
			d = append(d, fmt.Sprintf("%s: want %q, got %s", k, *want, quoteOrNull(got)))
		}
	}
	in := func(k string, want, got *int) {
		if want != nil && (got == nil || *want != *got) {
			g := "NULL"
			if got != nil {
				g = fmt.Sprint(*got)
			}
			d = append(d, fmt.Sprintf("%s: want %d, got %s", k, *want, g))
		}
	}
	str("run", w.Run, g.Run)
	in("rank", w.Rank, g.Rank)
	strN("host", w.Host, g.Host)
	in("step", w.StepLo, g.StepLo)
	in("step_hi", w.StepHi, g.StepHi)
	strN("subject", w.Subject, g.Subject)
	str("severity", w.Severity, g.Severity)
	str("metric", w.Metric, g.Metric)
	if w.Value != nil && (g.Value == nil || !w.Tol.ok(*w.Value, *g.Value)) {
		d = append(d, fmt.Sprintf("value: want %s%s, got %s", num(w.Value), w.Tol, num(g.Value)))
	}
	for _, s := range w.Message {
		if !strings.Contains(g.Message, s) {
			d = append(d, fmt.Sprintf("message lacks %q", s))
		}
	}
	return d
}

func quoteOrNull(s *string) string {
	if s == nil {
		return "NULL"
	}
	return fmt.Sprintf("%q", *s)
}

// CompareFindings pairs the expected findings with the actual ones (each
// with one of its own) and reports every expected finding left without a
// match, with the nearest actual one and how it differs, and every actual
// finding nobody expected. Nil means they agree.
func CompareFindings(want []WantFinding, got []Finding) []string {
	// bipartite matching by augmenting paths: an expectation that several
	// findings satisfy must not take the one another needs
	ok := make([][]bool, len(want))
	for i, w := range want {
		ok[i] = make([]bool, len(got))
		for j, g := range got {
			ok[i][j] = len(w.diffs(g)) == 0
		}
	}
	owner := make([]int, len(got)) // got j -> want i, or -1
	for j := range owner {
		owner[j] = -1
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		for j := range got {
			if ok[i][j] && !seen[j] {
				seen[j] = true
				if owner[j] < 0 || try(owner[j], seen) {
					owner[j] = i
					return true
				}
			}
		}
		return false
	}
	matched := make([]bool, len(want))
	for i := range want {
		matched[i] = try(i, make([]bool, len(got)))
	}
	var out []string
	for i, w := range want {
		if matched[i] {
			continue
		}
		p := "missing: " + w.String()
		best, bestD := -1, []string(nil)
		for j, g := range got {
			if g.Detector != w.Detector {
				continue
			}
			if d := w.diffs(g); best < 0 || len(d) < len(bestD) || len(d) == len(bestD) && owner[j] < 0 && owner[best] >= 0 {
				best, bestD = j, d
			}
		}
		if best >= 0 {
			p += fmt.Sprintf("\n  nearest: %s\n  differs: %s", got[best], strings.Join(bestD, "; "))
			if len(bestD) == 0 {
				p += "(it matches, but another expectation took it: expect it once, or add the finding it stands for)"
			}
		} else {
			p += fmt.Sprintf("\n  %s found nothing", w.Detector)
		}
		out = append(out, p)
	}
	for j, g := range got {
		if owner[j] < 0 {
			out = append(out, "unexpected: "+g.String())
		}
	}
	return out
}

// CompareMetrics reports every expected metric row that no actual row
// matches, with the detector's rows of that metric.
func CompareMetrics(want []WantMetric, got []MetricRow) []string {
	var out []string
	for _, w := range want {
		var same []MetricRow
		found := false
		for _, g := range got {
			if g.Detector != w.Detector || g.Metric != w.Metric {
				continue
			}
			same = append(same, g)
			if w.matches(g) {
				found = true
				break
			}
		}
		if found {
			continue
		}
		p := "missing metric: " + w.String()
		if len(same) == 0 {
			p += fmt.Sprintf("\n  %s wrote no %s rows", w.Detector, w.Metric)
		}
		for i, g := range same {
			if i == 8 {
				p += fmt.Sprintf("\n  ... %d more", len(same)-i)
				break
			}
			p += "\n  got: " + g.String()
		}
		out = append(out, p)
	}
	return out
}

func (w WantMetric) matches(g MetricRow) bool {
	eqI := func(a, b *int) bool { return a == nil || b != nil && *a == *b }
	return (w.Run == nil || *w.Run == g.Run) && eqI(w.Rank, g.Rank) && eqI(w.StepLo, g.StepLo) && eqI(w.StepHi, g.StepHi) &&
		(w.Subject == nil || g.Subject != nil && *w.Subject == *g.Subject) &&
		g.Value != nil && w.Tol.ok(w.Value, *g.Value)
}

func (w WantMetric) String() string {
	var b strings.Builder
	b.WriteString(w.Detector)
	optStr(&b, "run", w.Run)
	optInt(&b, "rank", w.Rank)
	optInt(&b, "step_lo", w.StepLo)
	optInt(&b, "step_hi", w.StepHi)
	optStr(&b, "subject", w.Subject)
	fmt.Fprintf(&b, " %s=%s%s (line %d)", w.Metric, num(&w.Value), w.Tol, w.Line)
	return b.String()
}

func (m MetricRow) String() string {
	var b strings.Builder
	b.WriteString(m.Detector)
	if m.Run != DefaultRun {
		fmt.Fprintf(&b, " run=%s", m.Run)
	}
	optInt(&b, "rank", m.Rank)
	optInt(&b, "step_lo", m.StepLo)
	optInt(&b, "step_hi", m.StepHi)
	optStr(&b, "subject", m.Subject)
	fmt.Fprintf(&b, " %s=%s", m.Metric, num(m.Value))
	return b.String()
}
