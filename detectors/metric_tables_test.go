package detectors

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/trainscope/trainscope/sql/duck"
)

// TestMetricTableKnown follows one metric detector's table through passes
// that find it in each state a pass learns once at its start (see
// metricTables): missing, as the detector makes it, with another
// description, with other columns; and through Check, which asks the
// catalog itself. A pass that misjudged the table would keep a stale
// table, comment or row, or fail to insert.
func TestMetricTableKnown(t *testing.T) {
	ctx := context.Background()
	st := oneRankStore(t)
	parse := func(desc, body string) *Detector {
		t.Helper()
		d, err := Parse("x/mt.sql", fmt.Appendf(nil, "-- name: mt\n-- category: test\n-- kind: metric\n-- description: %s\n%s\n", desc, body))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	pass := func(workers int, d *Detector) {
		t.Helper()
		set := &Set{Detectors: []*Detector{d}, Workers: workers}
		res, err := set.Run(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	// the table as the catalog has it, and its rows' runs
	type state struct {
		cols    []string
		comment string
		xDoc    string
		runs    []string
		metrics int
	}
	look := func() state {
		t.Helper()
		var s state
		rows, err := st.Query(ctx, "SELECT name || ' ' || type FROM pragma_table_info('main.metric_mt') ORDER BY cid")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			s.cols = append(s.cols, c)
		}
		rows.Close()
		if err := st.Conn().QueryRowContext(ctx, `SELECT (SELECT comment FROM duckdb_tables() WHERE table_name = 'metric_mt'),
			coalesce((SELECT any_value(comment) FROM duckdb_columns() WHERE table_name = 'metric_mt' AND column_name = 'x'), ''),
			(SELECT count(*) FROM metrics WHERE detector = 'mt')`).Scan(&s.comment, &s.xDoc, &s.metrics); err != nil {
			t.Fatal(err)
		}
		rows, err = st.Query(ctx, "SELECT run_id FROM metric_mt ORDER BY 1")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var r string
			if err := rows.Scan(&r); err != nil {
				t.Fatal(err)
			}
			s.runs = append(s.runs, r)
		}
		rows.Close()
		return s
	}
	check := func(step string, got, want state) {
		t.Helper()
		if !slices.Equal(got.cols, want.cols) || got.comment != want.comment || got.xDoc != want.xDoc ||
			!slices.Equal(got.runs, want.runs) || got.metrics != want.metrics {
			t.Errorf("%s: table %+v, want %+v", step, got, want)
		}
	}
	xDoc := "in metrics: detector = 'mt' AND metric = 'x'"
	v1 := parse("first", "SELECT 'r1' AS run_id, 0 AS rank, 1.5 AS x")
	for _, workers := range []int{1, 2} {
		pass(workers, v1)
		check(fmt.Sprintf("new table, %d workers", workers), look(), state{[]string{"run_id VARCHAR", "rank INTEGER", "x DOUBLE"}, "first", xDoc, []string{"r1"}, 1})
	}
	// a run this database holds no longer: its rows stay while the
	// table does
	if err := st.Exec(ctx, "INSERT INTO metric_mt VALUES ('gone', 0, 2)"); err != nil {
		t.Fatal(err)
	}
	pass(2, v1)
	check("same table", look(), state{[]string{"run_id VARCHAR", "rank INTEGER", "x DOUBLE"}, "first", xDoc, []string{"gone", "r1"}, 1})
	pass(2, parse("second", "SELECT 'r1' AS run_id, 0 AS rank, 1.5 AS x"))
	check("new description", look(), state{[]string{"run_id VARCHAR", "rank INTEGER", "x DOUBLE"}, "second", xDoc, []string{"gone", "r1"}, 1})
	pass(2, parse("second", "SELECT 'r1' AS run_id, 'a' AS what, 2 AS y, 3 AS z"))
	check("new columns", look(), state{[]string{"run_id VARCHAR", "what VARCHAR", "y DOUBLE", "z DOUBLE"}, "second", "", []string{"r1"}, 2})
	// Check knows no pass: it asks the catalog
	if err := v1.Check(ctx, st); err != nil {
		t.Fatal(err)
	}
	check("Check, new columns", look(), state{[]string{"run_id VARCHAR", "rank INTEGER", "x DOUBLE"}, "first", xDoc, []string{"r1"}, 3})
	if err := v1.Check(ctx, st); err != nil {
		t.Fatal(err)
	}
	check("Check, same table", look(), state{[]string{"run_id VARCHAR", "rank INTEGER", "x DOUBLE"}, "first", xDoc, []string{"r1", "r1"}, 4})
}

// TestUncommentedMetricTables: a pass that leaves the comments out
// (analyze without --db) stores the same table and metrics rows, one per
// number with the text columns as the subject, and a later pass that
// documents finds the table bare and comments it.
func TestUncommentedMetricTables(t *testing.T) {
	ctx := context.Background()
	st := oneRankStore(t)
	d, err := Parse("x/mu.sql", []byte("-- name: mu\n-- category: test\n-- kind: metric\n-- description: documented\n"+
		"SELECT 'r1' AS run_id, 2 AS step_lo, k AS kernel, 'x' || k AS op, k * 1.5 AS a, k * 10 AS b FROM range(1, 3) t(k)\n"))
	// every number a metric, the text column its subject
	if err != nil {
		t.Fatal(err)
	}
	query := func(q string) []string {
		t.Helper()
		rows, err := st.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	comments := `SELECT coalesce((SELECT comment FROM duckdb_tables() WHERE table_name = 'metric_mu'), '-') || ' / ' ||
		coalesce((SELECT comment FROM duckdb_columns() WHERE table_name = 'metric_mu' AND column_name = 'a'), '-')`
	wantMetrics := []string{
		"r1 mu NULL 2 NULL x1 a 1.5", "r1 mu NULL 2 NULL x1 b 10.0", "r1 mu NULL 2 NULL x1 kernel 1.0",
		"r1 mu NULL 2 NULL x2 a 3.0", "r1 mu NULL 2 NULL x2 b 20.0", "r1 mu NULL 2 NULL x2 kernel 2.0",
	}
	metricRows := `SELECT concat_ws(' ', run_id, detector, coalesce(rank::VARCHAR, 'NULL'), coalesce(step_lo::VARCHAR, 'NULL'),
		coalesce(step_hi::VARCHAR, 'NULL'), subject, metric, value) FROM metrics ORDER BY ALL`
	for _, c := range []struct {
		uncommented bool
		comments    string
	}{
		{true, "- / -"},
		{false, "documented / in metrics: detector = 'mu' AND metric = 'a'"},
		{true, "documented / in metrics: detector = 'mu' AND metric = 'a'"},
	} {
		set := &Set{Detectors: []*Detector{d}, Workers: 2, Uncommented: c.uncommented}
		res, err := set.Run(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Err != nil {
			t.Fatal(res[0].Err)
		}
		if got := query(comments); len(got) != 1 || got[0] != c.comments {
			t.Errorf("uncommented %v: comments %q, want %q", c.uncommented, got, c.comments)
		}
		if got := query(metricRows); !slices.Equal(got, wantMetrics) {
			t.Errorf("uncommented %v: metrics\n%q\nwant\n%q", c.uncommented, got, wantMetrics)
		}
		if got := query("SELECT count(*)::VARCHAR FROM metric_mu"); got[0] != "2" {
			t.Errorf("uncommented %v: %s rows in metric_mu, want 2", c.uncommented, got[0])
		}
	}
}

// oneRankStore is an empty in-memory store that knows run r1's rank 0,
// closed when the test ends.
func oneRankStore(t *testing.T) *duck.Store {
	t.Helper()
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Exec(ctx, `INSERT INTO ranks (run_id, rank, host, source, rank_source, events, json_bytes) VALUES ('r1', 0, '', 'x', 'x', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	return st
}
