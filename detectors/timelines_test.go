package detectors

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// The tables the timeline pass fills hold the rows their views compute:
// on a real two-rank trace with collectives, and on hand-made rows that
// touch, nest, overlap, repeat, last no time, and wait for a late peer,
// with and without a step window.
func TestTimelinesMatchTheViews(t *testing.T) {
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
		tl, err := readTimelines(ctx, st, 1)
		if err != nil {
			t.Fatal(err)
		}
		// 192 goroutines (a large server's threads; this machine's cores
		// are far fewer) make the rows one makes, in its order
		wide, err := readTimelines(ctx, st, 192)
		if err != nil {
			t.Fatal(err)
		}
		sameTimelines(t, tl, wide)
		tl.workers = 192 // the tables below: the views' rows from the wide sweeps
		for _, v := range []string{"gpu_busy", "gpu_class_time", "gpu_mem_exposed"} {
			// the view's rows, before a table of its name shadows it
			// (main.v would be the temporary table's name too)
			if err := st.Exec(ctx, fmt.Sprintf("CREATE OR REPLACE TEMP TABLE want_%[1]s AS SELECT * FROM %[1]s", v)); err != nil {
				t.Fatal(err)
			}
			done, err := materializeTimeline(ctx, st, tl, v, false)
			if err != nil || !done {
				t.Fatalf("%s: done %v, %v", v, done, err)
			}
			var rows, missing, extra int
			q := fmt.Sprintf(`SELECT (SELECT count(*) FROM temp.%[1]s),
				(SELECT count(*) FROM (SELECT * FROM want_%[1]s EXCEPT ALL SELECT * FROM temp.%[1]s)),
				(SELECT count(*) FROM (SELECT * FROM temp.%[1]s EXCEPT ALL SELECT * FROM want_%[1]s))`, v)
			if err := st.Conn().QueryRowContext(ctx, q).Scan(&rows, &missing, &extra); err != nil {
				t.Fatal(err)
			}
			if rows == 0 || missing != 0 || extra != 0 {
				t.Errorf("%s (window %+v): %d rows, %d of the view's missing, %d not the view's", v, w, rows, missing, extra)
			}
			if err := st.Exec(ctx, fmt.Sprintf("DROP TABLE temp.%[1]s; DROP TABLE want_%[1]s", v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("sampled_pair", func(t *testing.T) {
		st := sampledPairStore(t)
		check(t, st, Window{})
		check(t, st, Window{StepLo: -1000, StepHi: 1 << 30, Set: true})
	})
	t.Run("hand", func(t *testing.T) {
		st := rowsStore(t, handTimelineRows)
		check(t, st, Window{})
		var waits int
		if err := st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM collective_instances WHERE wait_ns > 0").Scan(&waits); err != nil || waits == 0 {
			t.Fatalf("the hand rows have %d collectives that waited (%v): the wait's sweep goes untested", waits, err)
		}
		check(t, st, Window{StepLo: 1, StepHi: 3, Set: true})
		check(t, st, Window{StepLo: 2, StepHi: 2, Set: true})
	})
}

// sameTimelines fails unless b's sweeps give a's rows in a's order.
func sameTimelines(t *testing.T, a, b *timelines) {
	t.Helper()
	type rows struct {
		Rk   []int32
		X, Y []int64
		Ok   bool
	}
	busy := func(tl *timelines) rows { rk, s, e := tl.busy(); return rows{rk, s, e, true} }
	class := func(tl *timelines) rows { rk, s, n, ok := tl.classTime(); return rows{rk, s, n, ok} }
	mem := func(tl *timelines) rows { rk, d, n, ok := tl.memExposed(); return rows{rk, d, n, ok} }
	for name, f := range map[string]func(*timelines) rows{"gpu_busy": busy, "gpu_class_time": class, "gpu_mem_exposed": mem} {
		ra, rb := f(a), f(b)
		if len(ra.Rk) == 0 || !reflect.DeepEqual(ra, rb) {
			t.Errorf("%s: %d workers gave %d rows, %d workers %d rows, or other rows or order", name, a.workers, len(ra.Rk), b.workers, len(rb.Rk))
		}
	}
}

// handTimelineRows: rank 0 and 1 share a collective (comm 'g', step 1):
// rank 1 arrives 40 late, so rank 0 waits 40 of its 60.
const handTimelineRows = `
INSERT INTO ranks (run_id, rank, host, source, rank_source, events, json_bytes) VALUES ('h', 0, 'a', 'x', 'x', 0, 0), ('h', 1, 'b', 'y', 'y', 0, 0);
INSERT INTO steps VALUES ('h', 0, 1, 0, 1000), ('h', 0, 2, 1000, 2000), ('h', 0, 3, 2000, 3000),
                         ('h', 1, 1, 0, 1000), ('h', 1, 2, 1000, 2000), ('h', 1, 3, 2000, 3000);
INSERT INTO slices_detail BY NAME
SELECT 'h' AS run_id, rank, 'a' AS host, step, kind, kind AS cat, name, 0 AS device, stream, ts, dur, 0 AS pid, stream AS tid, pg_ranks, coll_name, copy_kind
FROM (VALUES
  (0, 1, 'kernel', 'k1', 7, 100, 50, NULL, NULL, NULL),
  (0, 1, 'kernel', 'k2', 7, 150, 30, NULL, NULL, NULL),    -- touches k1
  (0, 1, 'kernel', 'k3', 8, 110, 10, NULL, NULL, NULL),    -- inside k1
  (0, 1, 'kernel', 'k3', 8, 110, 10, NULL, NULL, NULL),    -- the same again
  (0, 1, 'memcpy', 'm', 9, 170, 40, NULL, NULL, NULL),     -- overlaps k2, outlasts it
  (0, 1, 'kernel', 'k0', 7, 300, 0, NULL, NULL, NULL),     -- no time
  (0, 1, 'comm', 'nccl:all_reduce', 20, 400, 60, '[0, 1]', 'allreduce', NULL),
  (0, 1, 'kernel', 'k4', 7, 420, 100, NULL, NULL, NULL),
  (0, 2, 'kernel', 'k5', 7, 1100, 20, NULL, NULL, NULL),
  (0, 2, 'comm', 'nccl:all_reduce', 20, 1200, 30, '[0, 1]', 'allreduce', NULL),
  (0, 3, 'kernel', 'k6', 7, 2100, 20, NULL, NULL, NULL),
  (0, NULL, 'kernel', 'k7', 7, 2500, 20, NULL, NULL, NULL),
  (1, 1, 'kernel', 'k1', 7, 100, 200, NULL, NULL, NULL),
  (1, 1, 'comm', 'nccl:all_reduce', 20, 440, 20, '[0, 1]', 'allreduce', NULL),
  (1, 2, 'comm', 'nccl:all_reduce', 20, 1210, 20, '[0, 1]', 'allreduce', NULL),
  (1, 2, 'memset', 'z', 9, 1210, 5, NULL, NULL, NULL),
  (1, 1, 'memcpy', 'h2d', 9, 250, 100, NULL, NULL, 'HtoD'),   -- half under k1
  (1, 1, 'memcpy', 'h2d', 10, 260, 20, NULL, NULL, 'HtoD'),   -- beside it
  (1, 1, 'memcpy', 'd2h', 9, 600, 10, NULL, NULL, 'DtoH'),
  (1, 1, 'memcpy', 'h2h', 9, 610, 10, NULL, NULL, 'HtoH'),    -- Memcpy other, touching
  (1, 1, 'memcpy', 'p2p', 9, 700, 10, NULL, NULL, 'PtoP'),
  (1, 1, 'memcpy', 'd2d', 11, 700, 30, NULL, NULL, 'DtoD')
) v(rank, step, kind, name, stream, ts, dur, pg_ranks, coll_name, copy_kind)`

// mem_ops gives each copy kind its own exposed time: a 'Memcpy HtoH' row
// is not 0 while its time goes to a "Memcpy other" that has no row
// (before, both the Go sweep and the view put every copy kind but HtoD,
// DtoH, DtoD and PtoP into one "other" digit). Rank 1's HtoH copy runs
// 610-620 with no compute beside it; its HtoD copies 250-350 and 260-280
// under k1 (100-300): 50 exposed. Through the Go pass and through the
// view.
func TestMemOpsEveryCopyKind(t *testing.T) {
	ctx := context.Background()
	for _, viaView := range []bool{false, true} {
		st, err := duck.Open(ctx, "", duck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := st.Exec(ctx, handTimelineRows); err != nil {
			t.Fatal(err)
		}
		set, err := NewSet(Config{})
		if err != nil {
			t.Fatal(err)
		}
		set.Detectors = slices.DeleteFunc(set.Detectors, func(d *Detector) bool { return d.Name != "mem_ops" })
		if len(set.Detectors) != 1 {
			t.Fatalf("%d detectors named mem_ops", len(set.Detectors))
		}
		if err := SetWindow(ctx, st, Window{}); err != nil {
			t.Fatal(err)
		}
		sqlTimelines = viaView
		res, err := set.Run(ctx, st)
		sqlTimelines = false
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Err != nil {
			t.Fatal(res[0].Err)
		}
		got := map[string]float64{}
		rows, err := st.Query(ctx, "SELECT subject, value FROM metrics WHERE detector = 'mem_ops' AND rank = 1 AND metric = 'exposed_ns'")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			var v float64
			if err := rows.Scan(&s, &v); err != nil {
				t.Fatal(err)
			}
			got[s] = v
		}
		rows.Close()
		want := map[string]float64{"Memcpy HtoD": 50, "Memcpy DtoH": 10, "Memcpy HtoH": 10, "Memcpy PtoP": 10, "Memcpy DtoD": 30, "Memset": 5}
		if !maps.Equal(got, want) {
			t.Errorf("view %v: rank 1's exposed time by operation %v, want %v", viaView, got, want)
		}
	}
}

// sampledPairStore is an in-memory store holding HTA's sampled pair of
// traces (two ranks, run "pair"), closed when t ends.
func sampledPairStore(t *testing.T) *duck.Store {
	t.Helper()
	files := []string{corpus.Path(t, "kineto/hta/tests__data__trace_filter__sampled_rank-0.json.gz"),
		corpus.Path(t, "kineto/hta/tests__data__trace_filter__sampled_rank-1.json.gz")}
	st := rowsStore(t, "")
	if _, err := ingest.Load(context.Background(), st, files, ingest.Options{RunID: "pair", Rank: -1}); err != nil {
		t.Fatal(err)
	}
	return st
}

// rowsStore is an in-memory store holding what the statements rows insert
// (none when empty), closed when t ends.
func rowsStore(t *testing.T, rows string) *duck.Store {
	t.Helper()
	st, err := duck.Open(context.Background(), "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if rows != "" {
		if err := st.Exec(context.Background(), rows); err != nil {
			t.Fatal(err)
		}
	}
	return st
}
