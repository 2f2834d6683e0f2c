package duck_test

import (
	"fmt"
	"math"
	"strconv"
	"testing"
)

// Intervals are given as VALUES rows of (g, s, e); every query casts its
// output so that rowStrings renders it exactly.

func TestIntervalUnion(t *testing.T) {
	st := openMem(t)
	cases := []struct {
		name   string
		values string // VALUES rows (g, s, e)
		want   []string
	}{
		{"single", "(1, 10, 20)", []string{"1|10|20"}},
		{"disjoint", "(1, 30, 40), (1, 10, 20)", []string{"1|10|20", "1|30|40"}},
		{"nested", "(1, 0, 100), (1, 10, 20), (1, 30, 40)", []string{"1|0|100"}},
		{"nested, inner first by end", "(1, 0, 5), (1, 0, 100), (1, 50, 60)", []string{"1|0|100"}},
		{"overlapping", "(1, 0, 10), (1, 5, 15), (1, 12, 20)", []string{"1|0|20"}},
		{"overlap after gap", "(1, 0, 10), (1, 20, 30), (1, 25, 35), (1, 40, 41)", []string{"1|0|10", "1|20|35", "1|40|41"}},
		{"touching merges", "(1, 0, 10), (1, 10, 20), (1, 20, 25)", []string{"1|0|25"}},
		{"one short of touching", "(1, 0, 10), (1, 11, 20)", []string{"1|0|10", "1|11|20"}},
		{"identical", "(1, 5, 9), (1, 5, 9), (1, 5, 9)", []string{"1|5|9"}},
		{"reach from an earlier interval", "(1, 0, 100), (1, 10, 20), (1, 90, 95), (1, 100, 110), (1, 111, 112)", []string{"1|0|110", "1|111|112"}},
		{"zero-length kept", "(1, 7, 7)", []string{"1|7|7"}},
		{"zero-length inside", "(1, 0, 10), (1, 5, 5), (1, 10, 10)", []string{"1|0|10"}},
		{"reversed dropped", "(1, 20, 10), (1, 0, 5)", []string{"1|0|5"}},
		{"groups kept apart", "(1, 0, 10), (2, 5, 15), (1, 10, 12), (2, 20, 30)", []string{"1|0|12", "2|5|15", "2|20|30"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkRows(t, st, tc.want, "WITH iv(g, s, e) AS (VALUES "+tc.values+") "+
				"SELECT g::VARCHAR, s::BIGINT, e::BIGINT FROM interval_union(iv) ORDER BY g, s")
		})
	}

	t.Run("struct keys", func(t *testing.T) {
		mustExec(t, st, `CREATE TEMP TABLE iv_struct AS
SELECT {'run': run, 'rank': rank} AS g, s::BIGINT AS s, e::BIGINT AS e
FROM (VALUES ('a', 0, 0, 10), ('a', 0, 5, 20), ('a', 1, 5, 20), ('b', 0, 0, 3), ('a', 1, 20, 30), ('b', 0, 4, 6))
     t(run, rank, s, e)`)
		checkRows(t, st, []string{"a|0|0|20", "a|1|5|30", "b|0|0|3", "b|0|4|6"},
			"SELECT g.run, g.rank::VARCHAR, s, e FROM interval_union(iv_struct) ORDER BY g.run, g.rank, s")
	})

	t.Run("empty input", func(t *testing.T) {
		mustExec(t, st, "CREATE TEMP TABLE iv_empty (g INTEGER, s BIGINT, e BIGINT)")
		if n := queryInt(t, st, "SELECT count(*) FROM interval_union(iv_empty)"); n != 0 {
			t.Errorf("union of nothing has %d rows", n)
		}
	})

	t.Run("real table", func(t *testing.T) {
		// Busy time per rank from the slices table through a CTE.
		insertSlices(t, st, "run-1", "node-a", 0)
		checkRows(t, st, []string{"0|1000000|1050000", "0|1060000|1260000", "0|1300000|1304000"}, `
WITH gpu AS (SELECT rank AS g, ts AS s, ts + dur AS e FROM slices WHERE kind IN ('kernel', 'comm', 'memcpy'))
SELECT g::VARCHAR, s, e FROM interval_union(gpu) ORDER BY s`)
	})
}

func TestCoveredAndExposedTime(t *testing.T) {
	st := openMem(t)
	cases := []struct {
		name string
		a, b string   // VALUES rows (g, s, e); b may be "" for an empty B
		want []string // g|a_ns|covered_ns|exposed_ns
	}{
		{"fully covered", "(1, 10, 20)", "(1, 0, 30)", []string{"1|10|10|0"}},
		{"exactly covered", "(1, 10, 20)", "(1, 10, 20)", []string{"1|10|10|0"}},
		{"partially, B ends inside", "(1, 0, 10)", "(1, 5, 15)", []string{"1|10|5|5"}},
		{"partially, B starts before", "(1, 10, 20)", "(1, 0, 14)", []string{"1|10|4|6"}},
		{"B inside A", "(1, 0, 100)", "(1, 40, 50)", []string{"1|100|10|90"}},
		{"not at all", "(1, 0, 10)", "(1, 20, 30)", []string{"1|10|0|10"}},
		{"touching after", "(1, 0, 10)", "(1, 10, 20)", []string{"1|10|0|10"}},
		{"touching before", "(1, 10, 20)", "(1, 0, 10)", []string{"1|10|0|10"}},
		{"B empty for one group", "(1, 0, 10), (2, 0, 10)", "(1, 0, 10)", []string{"1|10|10|0", "2|10|0|10"}},
		{"B only in another group", "(1, 0, 10)", "(2, 0, 10)", []string{"1|10|0|10"}},
		{"B empty", "(1, 0, 10), (2, 5, 8)", "", []string{"1|10|0|10", "2|3|0|3"}},
		{"many on both sides", "(1, 0, 10), (1, 20, 30), (1, 40, 50)", "(1, 5, 25), (1, 45, 100)", []string{"1|30|15|15"}},
		{"B bridges a gap in A", "(1, 0, 10), (1, 20, 30)", "(1, 5, 25)", []string{"1|20|10|10"}},
		{"A overlaps itself", "(1, 0, 10), (1, 5, 15)", "(1, 12, 20)", []string{"1|15|3|12"}},
		{"A nested and duplicated", "(1, 0, 10), (1, 2, 4), (1, 0, 10)", "(1, 3, 6)", []string{"1|10|3|7"}},
		{"B overlaps itself", "(1, 0, 10)", "(1, 0, 6), (1, 4, 8), (1, 4, 8)", []string{"1|10|8|2"}},
		{"B touching pieces", "(1, 0, 10)", "(1, 0, 3), (1, 3, 6)", []string{"1|10|6|4"}},
		{"two groups, mixed", "(1, 0, 10), (1, 5, 20), (2, 100, 200)", "(1, 15, 30), (2, 150, 160), (2, 190, 250)",
			[]string{"1|20|5|15", "2|100|20|80"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := "SELECT * FROM (VALUES (0, 0::BIGINT, 0::BIGINT)) t(g, s, e) WHERE false"
			if tc.b != "" {
				b = "VALUES " + tc.b
			}
			with := "WITH a(g, s, e) AS (VALUES " + tc.a + "), b(g, s, e) AS (" + b + ") "
			checkRows(t, st, tc.want, with+
				"SELECT g::VARCHAR, a_ns::BIGINT, covered_ns::BIGINT, exposed_ns::BIGINT FROM exposed_time(a, b) ORDER BY g")
			// covered_time is exposed_time without the difference.
			var want3 []string
			for _, w := range tc.want {
				want3 = append(want3, w[:len(w)-len(lastField(w))-1])
			}
			checkRows(t, st, want3, with+
				"SELECT g::VARCHAR, a_ns::BIGINT, covered_ns::BIGINT FROM covered_time(a, b) ORDER BY g")
		})
	}

	t.Run("struct keys", func(t *testing.T) {
		checkRows(t, st, []string{"r|0|10|4|6", "r|1|10|0|10"}, `
WITH a AS (SELECT {'run': 'r', 'rank': rank} AS g, s, e FROM (VALUES (0, 0, 10), (1, 0, 10)) t(rank, s, e)),
     b AS (SELECT {'run': 'r', 'rank': rank} AS g, s, e FROM (VALUES (0, 6, 20), (2, 0, 10)) t(rank, s, e))
SELECT g.run, g.rank::VARCHAR, a_ns::BIGINT, covered_ns::BIGINT, exposed_ns::BIGINT FROM exposed_time(a, b) ORDER BY g.rank`)
	})
}

func lastField(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '|' {
			return s[i+1:]
		}
	}
	return s
}

func TestScalarMacros(t *testing.T) {
	st := openMem(t)
	floatCases := []struct {
		expr string
		want float64 // NaN: NULL
	}{
		{"robust_z(10, 4, 2)", 0.6745 * 6 / 2},
		{"robust_z(1, 4, 3)", -0.6745},
		{"robust_z(4, 4, 2)", 0},
		{"robust_z(7.5, 2.5, 0.5)", 0.6745 * 10},
		{"robust_z(10, 4, 0)", 0},
		{"robust_z(10, 4, 0.0)", 0},
		{"robust_z(10, 4, NULL)", 0},
		{"pct(25, 200)", 12.5},
		{"pct(3, 4)", 75},
		{"pct(1, 3)", 100.0 / 3},
		{"pct(5, 5)", 100},
		{"pct(0, 10)", 0},
		{"pct(7, 0)", 0},
		{"pct(7, 0.0)", 0},
		{"pct(7, NULL)", 0},
		{"pct(NULL, 10)", math.NaN()},
	}
	for _, tc := range floatCases {
		t.Run(tc.expr, func(t *testing.T) {
			got := rowStrings(t, st, "SELECT ("+tc.expr+")::DOUBLE")
			if len(got) != 1 {
				t.Fatalf("rows = %q", got)
			}
			if math.IsNaN(tc.want) {
				if got[0] != "NULL" {
					t.Errorf("= %s, want NULL", got[0])
				}
				return
			}
			v, err := strconv.ParseFloat(got[0], 64)
			if err != nil {
				t.Fatalf("%q: %v", got[0], err)
			}
			if math.Abs(v-tc.want) > 1e-9 {
				t.Errorf("= %v, want %v", v, tc.want)
			}
		})
	}

	strCases := []struct{ expr, want string }{
		{"fmt_ns(0)", "0 ns"},
		{"fmt_ns(999)", "999 ns"},
		{"fmt_ns(-999)", "-999 ns"},
		{"fmt_ns(12.7)", "13 ns"},
		{"fmt_ns(1000)", "1.0 us"},
		{"fmt_ns(1500)", "1.5 us"},
		{"fmt_ns(123456)", "123.5 us"},
		{"fmt_ns(1000000)", "1.00 ms"},
		{"fmt_ns(2500000)", "2.50 ms"},
		{"fmt_ns(-2500000)", "-2.50 ms"},
		{"fmt_ns(999990000)", "999.99 ms"},
		{"fmt_ns(1000000000)", "1.00 s"},
		{"fmt_ns(3000000000::BIGINT)", "3.00 s"},
		{"fmt_ns(125000000000::BIGINT)", "125.00 s"},
		{"fmt_ns(sum(x)) FROM (VALUES (2000::BIGINT), (1500::BIGINT)) t(x)", "3.5 us"}, // HUGEINT input
		{"fmt_ns(NULL)", "n/a"},
	}
	for _, tc := range strCases {
		t.Run(tc.expr, func(t *testing.T) {
			checkRows(t, st, []string{tc.want}, "SELECT "+tc.expr)
		})
	}

	t.Run("metric_value", func(t *testing.T) {
		mustExec(t, st, `INSERT INTO metrics (run_id, detector, rank, metric, value) VALUES
('r', 'step_time', 0, 'mean_ns', 100), ('r', 'step_time', 1, 'mean_ns', 150),
('r', 'step_time', NULL, 'mean_ns', 125), ('r', 'overlap', 0, 'mean_ns', 7)`)
		checkRows(t, st, []string{"100.0|150.0|125.0|7.0|NULL|NULL"}, `SELECT
metric_value('step_time', 0, 'mean_ns')::VARCHAR, metric_value('step_time', 1, 'mean_ns')::VARCHAR,
metric_value('step_time', NULL, 'mean_ns')::VARCHAR, metric_value('overlap', 0, 'mean_ns')::VARCHAR,
metric_value('step_time', 2, 'mean_ns')::VARCHAR, metric_value('step_time', 0, 'p99_ns')::VARCHAR`)
	})
}

// active_time is the sweep under covered_time; it is tested only where the
// schema defines it.
func TestActiveTime(t *testing.T) {
	st := openMem(t)
	if queryInt(t, st, "SELECT count(*) FROM duckdb_functions() WHERE function_name = 'active_time'") == 0 {
		t.Skip("schema has no active_time macro")
	}
	const c2 = 1 << 20 // the second class's digit
	cases := []struct {
		name   string
		values string // VALUES rows (g, s, e, w)
		want   []string
	}{
		{"one interval", "(1, 0, 10, 1)", []string{"1|1|10"}},
		{"overlap counts up", "(1, 0, 10, 1), (1, 5, 15, 1)", []string{"1|1|10", "1|2|5"}},
		{"identical", "(1, 0, 10, 1), (1, 0, 10, 1)", []string{"1|2|10"}},
		{"touching", "(1, 0, 10, 1), (1, 10, 20, 1)", []string{"1|1|20"}},
		{"gap is not active", "(1, 0, 10, 1), (1, 30, 35, 1)", []string{"1|1|15"}},
		{"two classes", fmt.Sprintf("(1, 0, 10, 1), (1, 5, 20, %d)", c2),
			[]string{"1|1|5", fmt.Sprintf("1|%d|10", c2), fmt.Sprintf("1|%d|5", c2+1)}},
		{"empty and reversed ignored", "(1, 5, 5, 1), (1, 9, 3, 1), (2, 0, 4, 1)", []string{"2|1|4"}},
		{"groups apart", "(1, 0, 10, 1), (2, 5, 15, 1)", []string{"1|1|10", "2|1|10"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkRows(t, st, tc.want, "WITH iv(g, s, e, w) AS (VALUES "+tc.values+") "+
				"SELECT g::VARCHAR, state::BIGINT, ns::BIGINT FROM active_time(iv) ORDER BY g, state")
		})
	}
}
