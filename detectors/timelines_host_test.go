package detectors

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/sql/duck"
)

// hostOpTimeBefore is host_op_time as it was before host_stack_time: one
// scan of the window's host slices.
const hostOpTimeBefore = `
SELECT run_id, rank, tid, kind, name, count(*) AS calls, sum(dur) AS total_ns, sum(self_dur) AS self_ns,
       max(dur) AS longest_ns, min(ts) AS first_ts, max(ts + dur) AS last_ts
FROM host_window
WHERE self_dur IS NOT NULL
GROUP BY run_id, rank, tid, kind, name`

// hostExposedPerBefore is host_exposed's text up to its used CTE before
// host_stack_time: the launching threads and the per-thread sums read
// from the window's host slices.
const hostExposedPerBefore = `WITH RECURSIVE launchers AS (
    SELECT run_id, rank, tid FROM host_window WHERE kind = 'runtime' GROUP BY run_id, rank, tid
), launching AS (
    SELECT DISTINCT run_id, rank FROM launchers
), per AS (
    SELECT h.run_id, h.rank, h.kind, h.stack_id, sum(h.calls) AS calls, sum(h.self_ns) AS self_ns,
           sum(h.exposed_self_ns) AS exposed_self_ns
    FROM (
        SELECT run_id, rank, tid, kind, stack_id, count(*) AS calls, sum(self_dur) AS self_ns,
               sum(self_dur * (1.0 - gpu_busy_dur / dur)) AS exposed_self_ns
        FROM host_window
        WHERE kind IN ('python', 'cpu_op', 'annotation') AND self_dur > 0 AND dur > 0
        GROUP BY ALL
    ) h
    LEFT JOIN launchers l ON l.run_id = h.run_id AND l.rank = h.rank AND l.tid = h.tid
    LEFT JOIN launching x ON x.run_id = h.run_id AND x.rank = h.rank
    WHERE l.tid IS NOT NULL OR x.rank IS NULL
    GROUP BY h.run_id, h.rank, h.kind, h.stack_id
`

// runtimeCallsBefore is runtime_api's per-call sums as it reads them from
// the window's host slices.
const runtimeCallsBefore = `
SELECT run_id, rank, name, count(*) AS calls, sum(dur) AS host_ns, sum(dur - gpu_busy_dur) AS exposed_ns
FROM host_window
WHERE kind IN ('runtime', 'driver')
GROUP BY ALL`

// runtimeCallsAfter is the same from host_stack_time.
const runtimeCallsAfter = `
SELECT run_id, rank, name, sum(slices)::BIGINT AS calls, sum(slices_ns) AS host_ns, sum(idle_ns) AS exposed_ns
FROM host_stack_time
WHERE kind IN ('runtime', 'driver')
GROUP BY ALL`

// handHostRows: rank 0's thread 1 launches GPU work, its thread 2 (a
// background thread) does not; rank 1 shows no launching thread, so all
// its threads count. Two operators of one name under different callers
// (stacks 2 and 3), a stack that holds two names (the step annotations'
// stack 0), slices that last no time, have no self time (all of stack
// 6's), no self time known (NULL) or no GPU busy time known, runtime and
// driver calls (one with no self time known, one with no GPU busy time),
// and slices in steps 1-3.
const handHostRows = `
INSERT INTO ranks (run_id, rank, host, source, rank_source, events, json_bytes) VALUES ('h', 0, 'a', 'x', 'x', 0, 0), ('h', 1, 'b', 'y', 'y', 0, 0);
INSERT INTO steps VALUES ('h', 0, 1, 0, 1000), ('h', 0, 2, 1000, 2000), ('h', 0, 3, 2000, 3000),
                         ('h', 1, 1, 0, 1000), ('h', 1, 2, 1000, 2000), ('h', 1, 3, 2000, 3000);
INSERT INTO stacks VALUES ('h', 0, 0, NULL, 0, 'annotation', 'ProfilerStep#*'), ('h', 0, 1, 0, 1, 'python', 'train.py(1): f'),
                          ('h', 0, 2, 1, 2, 'cpu_op', 'aten::mm'), ('h', 0, 3, 0, 1, 'cpu_op', 'aten::mm'),
                          ('h', 0, 4, NULL, 0, 'python', 'tqdm.py(3): run'), ('h', 0, 5, 1, 2, 'runtime', 'cudaLaunchKernel'),
                          ('h', 0, 6, 1, 2, 'cpu_op', 'aten::zero_'),
                          ('h', 1, 0, NULL, 0, 'python', 'train.py(9): g'), ('h', 1, 1, 0, 1, 'cpu_op', 'aten::add');
INSERT INTO slices_core BY NAME
SELECT 'h' AS run_id, rank, 'a' AS host, step, kind, kind AS cat, name, ts, dur, 0 AS pid, tid, self_dur, stack_id, gpu_busy_dur
FROM (VALUES
  (0, 1, 1, 'annotation', 'ProfilerStep#1', 0, 1000, 100, 0, 200),
  (0, 2, 1, 'annotation', 'ProfilerStep#2', 1000, 1000, 300, 0, 100),
  (0, 3, 1, 'annotation', 'ProfilerStep#3', 2000, 1000, 50, 0, NULL),
  (0, 1, 1, 'python', 'train.py(1): f', 10, 400, 150, 1, 100),
  (0, 1, 1, 'cpu_op', 'aten::mm', 20, 200, 200, 2, 50),
  (0, 2, 1, 'cpu_op', 'aten::mm', 1020, 300, 250, 2, 0),
  (0, 3, 1, 'cpu_op', 'aten::mm', 2020, 100, 100, 2, 100),
  (0, 2, 1, 'cpu_op', 'aten::mm', 1500, 80, 80, 3, 20),
  (0, 2, 1, 'cpu_op', 'aten::mm', 1600, 0, 0, 3, 0),
  (0, 2, 1, 'cpu_op', 'aten::view', 1700, 10, 0, 3, 5),
  (0, 2, 1, 'cpu_op', 'aten::empty', 1710, 10, NULL, 3, 5),
  (0, 2, 1, 'cpu_op', 'aten::zero_', 1720, 10, 0, 6, 0),
  (0, 1, 1, 'runtime', 'cudaLaunchKernel', 300, 5, 5, 5, 0),
  (0, 2, 1, 'runtime', 'cudaLaunchKernel', 1300, 9, 9, 5, NULL),
  (0, 3, 1, 'driver', 'cuLaunchKernel', 2300, 4, NULL, NULL, 1),
  (0, 1, 2, 'python', 'tqdm.py(3): run', 30, 600, 600, 4, 300),
  (0, NULL, 2, 'user', 'untimed', 40, 7, NULL, NULL, NULL),
  (1, 1, 5, 'python', 'train.py(9): g', 10, 500, 400, 0, 100),
  (1, 2, 5, 'python', 'train.py(9): g', 1010, 500, 450, 0, NULL),
  (1, 2, 5, 'cpu_op', 'aten::add', 1100, 100, 100, 1, 100),
  (1, 3, 6, 'cpu_op', 'aten::add', 2100, 100, 100, 1, 0)
) v(rank, step, tid, kind, name, ts, dur, self_dur, stack_id, gpu_busy_dur);
INSERT INTO slices_detail BY NAME
SELECT 'h' AS run_id, rank, 'a' AS host, step, 'kernel' AS kind, 'kernel' AS cat, 'k' AS name, 0 AS device, 7 AS stream, ts, dur, 0 AS pid, 7 AS tid
FROM (VALUES (0, 1, 350, 100), (0, 2, 1350, 100), (0, 3, 2350, 100), (1, 1, 50, 100), (1, 2, 1050, 100), (1, 3, 2050, 100)) v(rank, step, ts, dur);
`

// host_stack_time feeds host_op_time and host_exposed the rows they had
// when each scanned the window's host slices itself, and holds
// runtime_api's per-call sums, on a real two-rank
// trace and on hand-made rows, with and without a step window, read
// through the views and through a pass's tables (temporary, and shared
// as forks see them, the timelines on 192 goroutines), and the pass
// computes it before host_op_time.
func TestHostStackTimeFeedsHostOpTime(t *testing.T) {
	ctx := context.Background()
	if i, j := slices.Index(sharedViews, "host_stack_time"), slices.Index(sharedViews, "host_op_time"); i < 0 || i > j {
		t.Fatalf("shared views %v: host_stack_time must come before host_op_time", sharedViews)
	}
	ds, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var he *Detector
	for _, d := range ds {
		if d.Name == "host_exposed" {
			he = d
		}
	}
	if he == nil {
		t.Fatal("no host_exposed")
	}
	cut := strings.Index(he.SQL, "), used AS")
	if cut < 0 || !strings.Contains(he.SQL[:cut], "host_stack_time") {
		t.Fatalf("host_exposed reads no host_stack_time before its used CTE:\n%s", he.SQL)
	}
	before := hostExposedPerBefore + he.SQL[cut:]
	check := func(t *testing.T, st *duck.Store, w Window, minExposed int) {
		t.Helper()
		if err := SetWindow(ctx, st, w); err != nil {
			t.Fatal(err)
		}
		// the former texts, before any pass's table shadows the views
		if err := st.Exec(ctx, "CREATE OR REPLACE TEMP TABLE want_host_op_time AS "+hostOpTimeBefore); err != nil {
			t.Fatal(err)
		}
		if err := st.Exec(ctx, "CREATE OR REPLACE TEMP TABLE want_host_exposed AS "+before, he.args()...); err != nil {
			t.Fatal(err)
		}
		if err := st.Exec(ctx, "CREATE OR REPLACE TEMP TABLE want_runtime_calls AS "+runtimeCallsBefore); err != nil {
			t.Fatal(err)
		}
		defer st.Exec(ctx, "DROP TABLE want_host_op_time; DROP TABLE want_host_exposed; DROP TABLE want_runtime_calls")
		compare := func(how string) {
			t.Helper()
			sameRows(t, st, fmt.Sprintf("host_op_time (%s, window %+v)", how, w), "want_host_op_time", "host_op_time", 1)
			if err := st.Exec(ctx, "CREATE OR REPLACE TEMP TABLE got_host_exposed AS "+he.SQL, he.args()...); err != nil {
				t.Fatal(err)
			}
			defer st.Exec(ctx, "DROP TABLE got_host_exposed")
			sameRows(t, st, fmt.Sprintf("host_exposed (%s, window %+v)", how, w), "want_host_exposed", "got_host_exposed", minExposed)
			if err := st.Exec(ctx, "CREATE OR REPLACE TEMP TABLE got_runtime_calls AS "+runtimeCallsAfter); err != nil {
				t.Fatal(err)
			}
			defer st.Exec(ctx, "DROP TABLE got_runtime_calls")
			sameRows(t, st, fmt.Sprintf("runtime calls (%s, window %+v)", how, w), "want_runtime_calls", "got_runtime_calls", 1)
		}
		compare("views")
		for _, shared := range []bool{false, true} {
			if err := materialize(ctx, st, shared, 192, nil); err != nil {
				t.Fatal(err)
			}
			var hst int
			if err := st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'host_stack_time'").Scan(&hst); err != nil || hst != 1 {
				t.Errorf("shared %v: %d host_stack_time tables (%v)", shared, hst, err)
			}
			compare(fmt.Sprintf("a pass's tables, shared %v", shared))
			ReleaseShared(ctx, st)
		}
	}
	t.Run("sampled_pair", func(t *testing.T) {
		st := sampledPairStore(t)
		check(t, st, Window{}, 1)
		check(t, st, Window{StepLo: -1000, StepHi: 1 << 30, Set: true}, 1)
	})
	t.Run("hand", func(t *testing.T) {
		st := rowsStore(t, handHostRows)
		check(t, st, Window{StepLo: 1, StepHi: 3, Set: true}, 5)
		check(t, st, Window{}, 5)
		check(t, st, Window{StepLo: 2, StepHi: 2, Set: true}, 3)
		// rank 0's background thread does not count; rank 1's do
		var bg, r1 int
		if err := st.Conn().QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE subject LIKE '%tqdm%'), count(*) FILTER (WHERE rank = 1)
			FROM (`+he.SQL+`)`, he.args()...).Scan(&bg, &r1); err != nil || bg != 0 || r1 == 0 {
			t.Errorf("host_exposed by hand: %d background stacks, %d of rank 1's (%v)", bg, r1, err)
		}
	})
}

// sameRows fails unless tables a and b hold the same rows (at least min)
// of the same column types.
func sameRows(t *testing.T, st *duck.Store, what, a, b string, min int) {
	t.Helper()
	var n, missing, extra int
	var ta, tb string
	q := fmt.Sprintf(`SELECT (SELECT count(*) FROM %[2]s),
		(SELECT count(*) FROM (SELECT * FROM %[1]s EXCEPT ALL SELECT * FROM %[2]s)),
		(SELECT count(*) FROM (SELECT * FROM %[2]s EXCEPT ALL SELECT * FROM %[1]s)),
		(SELECT string_agg(column_name || ' ' || column_type, ', ') FROM (DESCRIBE SELECT * FROM %[1]s)),
		(SELECT string_agg(column_name || ' ' || column_type, ', ') FROM (DESCRIBE SELECT * FROM %[2]s))`, a, b)
	if err := st.Conn().QueryRowContext(context.Background(), q).Scan(&n, &missing, &extra, &ta, &tb); err != nil {
		t.Fatal(err)
	}
	if n < min || missing != 0 || extra != 0 || ta != tb {
		t.Errorf("%s: %d rows, %d of the former missing, %d not the former's; columns %s, before %s", what, n, missing, extra, tb, ta)
	}
}
