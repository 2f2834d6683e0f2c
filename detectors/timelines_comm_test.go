package detectors

import (
	"context"
	"reflect"
	"testing"

	"github.com/trainscope/trainscope/sql/duck"
)

// handCommRows add to handTimelineRows, on rank 0 in step 1: a second key
// (stream 21's broadcasts) whose two transfers overlap (600-650 and
// 640-680: 80 of union) and have a compute kernel under 650-660 (70
// exposed), one that lasts no time, and a key (send) whose only transfer
// lasts no time: no row.
const handCommRows = `
INSERT INTO slices_detail BY NAME
SELECT 'h' AS run_id, rank, 'a' AS host, step, kind, kind AS cat, name, 0 AS device, stream, ts, dur, 0 AS pid, stream AS tid, pg_ranks, coll_name
FROM (VALUES
  (0, 1, 'comm', 'nccl:broadcast', 21, 600, 50, NULL, 'broadcast'),
  (0, 1, 'comm', 'nccl:broadcast', 21, 640, 40, NULL, 'broadcast'),
  (0, 1, 'comm', 'nccl:broadcast', 21, 700, 0, NULL, 'broadcast'),
  (0, 1, 'kernel', 'k8', 7, 650, 10, NULL, NULL),
  (0, 1, 'comm', 'nccl:send', 22, 800, 0, NULL, 'send')
) v(rank, step, kind, name, stream, ts, dur, pg_ranks, coll_name)`

// comm_exposed's table from the Go pass holds the rows of its view, on 1
// and on 192 goroutines alike: on a real two-rank trace with collectives
// and on hand-made rows (waits for a late peer, overlapping transfers of
// one key, transfers and kernels that last no time), with and without a
// step window.
func TestCommExposedMatchesTheView(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, st *duck.Store, w Window) {
		t.Helper()
		if err := SetWindow(ctx, st, w); err != nil {
			t.Fatal(err)
		}
		if err := st.Exec(ctx, "CREATE OR REPLACE TEMP TABLE collective_instances AS SELECT * FROM main.collective_instances"); err != nil {
			t.Fatal(err)
		}
		defer st.Exec(ctx, "DROP TABLE IF EXISTS temp.collective_instances")
		if err := st.Exec(ctx, "CREATE OR REPLACE TEMP TABLE want_comm_exposed AS SELECT * FROM comm_exposed"); err != nil {
			t.Fatal(err)
		}
		defer st.Exec(ctx, "DROP TABLE IF EXISTS temp.want_comm_exposed")
		byRk, _, err := readTransfers(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		type rows struct {
			Rk      []int32
			Key     []int
			Exposed []int64
		}
		var got [2]rows
		for i, workers := range []int{1, 192} {
			tl, err := readTimelines(ctx, st, workers)
			if err != nil {
				t.Fatal(err)
			}
			got[i].Rk, got[i].Key, got[i].Exposed = tl.commExposed(byRk)
			if workers == 192 {
				done, err := materializeTimeline(ctx, st, tl, "comm_exposed", false)
				if err != nil || !done {
					t.Fatalf("done %v, %v", done, err)
				}
			}
		}
		defer st.Exec(ctx, "DROP TABLE IF EXISTS temp.comm_exposed")
		if len(got[0].Rk) == 0 || !reflect.DeepEqual(got[0], got[1]) {
			t.Errorf("1 goroutine gave %d rows, 192 %d rows, or other rows or order", len(got[0].Rk), len(got[1].Rk))
		}
		var n, missing, extra int
		if err := st.Conn().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM temp.comm_exposed),
			(SELECT count(*) FROM (SELECT * FROM want_comm_exposed EXCEPT ALL SELECT * FROM temp.comm_exposed)),
			(SELECT count(*) FROM (SELECT * FROM temp.comm_exposed EXCEPT ALL SELECT * FROM want_comm_exposed))`).Scan(&n, &missing, &extra); err != nil {
			t.Fatal(err)
		}
		if n == 0 || missing != 0 || extra != 0 {
			t.Errorf("window %+v: %d rows, %d of the view's missing, %d not the view's", w, n, missing, extra)
		}
	}
	t.Run("sampled_pair", func(t *testing.T) {
		st := sampledPairStore(t)
		check(t, st, Window{})
		check(t, st, Window{StepLo: -1000, StepHi: 1 << 30, Set: true})
	})
	t.Run("hand", func(t *testing.T) {
		st := rowsStore(t, handTimelineRows+";"+handCommRows)
		check(t, st, Window{})
		check(t, st, Window{StepLo: 1, StepHi: 3, Set: true})
		check(t, st, Window{StepLo: 2, StepHi: 2, Set: true})
		// the broadcasts' exposed time, and no row for the send, by hand
		if err := SetWindow(ctx, st, Window{}); err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		rows, err := st.Query(ctx, "SELECT coll, exposed_ns FROM comm_exposed WHERE rank = 0 AND grp = 'stream 21' OR coll = 'send'")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c string
			var ns int64
			if err := rows.Scan(&c, &ns); err != nil {
				t.Fatal(err)
			}
			got[c] = ns
		}
		rows.Close()
		if want := map[string]int64{"broadcast": 70}; !reflect.DeepEqual(got, want) {
			t.Errorf("comm_exposed by hand: %v, want %v", got, want)
		}
	})
}

// The interval helpers on edge cases: touching, nested, disjoint.
func TestCommIntervals(t *testing.T) {
	for _, c := range []struct {
		a, b    [][2]int64
		covered int64
		merged  int
	}{
		{a: [][2]int64{{0, 10}, {10, 20}}, b: [][2]int64{{5, 15}}, covered: 10, merged: 1},
		{a: [][2]int64{{0, 100}, {20, 30}}, b: [][2]int64{{10, 20}, {90, 200}}, covered: 20, merged: 1},
		{a: [][2]int64{{50, 60}, {0, 10}}, b: [][2]int64{{10, 50}}, covered: 0, merged: 2},
		{a: [][2]int64{{0, 10}}, b: nil, covered: 0, merged: 1},
		{a: [][2]int64{{0, 30}}, b: [][2]int64{{0, 5}, {10, 15}, {20, 40}}, covered: 20, merged: 1},
	} {
		a := mergeIntervals(c.a)
		if len(a) != c.merged {
			t.Errorf("%v merged into %v", c.a, a)
		}
		if got := coveredNs(a, mergeIntervals(c.b)); got != c.covered {
			t.Errorf("%v under %v: %d covered, want %d", c.a, c.b, got, c.covered)
		}
	}
}
