package detectors

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/trainscope/trainscope/sql/duck"
)

// comm_exposed (sql/schema/040_views.sql: per rank, process group and
// collective, the transfer time no compute overlapped) is a timeline view
// too: its view sweeps every compute kernel within each key's span once
// per key, in DuckDB's window functions, most of comm_groups' time (syn8:
// 83K compute rows and 13K transfers, about 150 ms of CPU). Here the
// compute of each rank is merged once, from the timeline pass's read, and
// each key's transfers are set against it.
func init() {
	sharedViews = append(sharedViews, "comm_exposed")
	timelineViews["comm_exposed"] = true
	timelineTypes["comm_exposed"] = "run_id VARCHAR, rank INTEGER, grp VARCHAR, coll VARCHAR, exposed_ns BIGINT"
}

// commTransferQuery reads each collective's transfer, from its last
// member's arrival, with the view's group and collective names (a row
// that matches several waits comes once per match, as in the view).
const commTransferQuery = `WITH ci AS (
    SELECT run_id, rank, stream, ts, wait_ns FROM collective_instances WHERE wait_ns > 0
)
SELECT g.rk, g.ts + coalesce(ci.wait_ns, 0) AS s, g.end_ts AS e,
       coalesce(nullif(pg_desc, 'undefined'), 'pg ' || pg_name || coalesce(' ' || pg_ranks, ''), 'stream ' || g.stream) AS grp,
       coalesce(coll_name, name) || coalesce(' ' || coll_algo || coalesce('/' || coll_proto, ''), '') AS coll
FROM gpu_window g
LEFT JOIN ci ON ci.run_id = g.run_id AND ci.rank = g.rank AND ci.stream IS NOT DISTINCT FROM g.stream AND ci.ts = g.ts
WHERE g.class = 'COMM' AND g.kind = 'comm'`

// commKey is a (group, collective) pair of comm_exposed.
type commKey struct{ grp, coll string }

// transfer is one collective's transfer on a rank: its key's index and
// its interval.
type transfer struct {
	key  int
	s, e int64
}

// readTransfers reads the window's transfers by group (rank), with the
// keys they name. Rows whose interval, group or collective is NULL are
// left out: the view's joins and sweep drop them.
func readTransfers(ctx context.Context, st *duck.Store) (map[int32][]transfer, []commKey, error) {
	rdr, err := st.QueryArrow(ctx, commTransferQuery)
	if err != nil {
		return nil, nil, err
	}
	defer rdr.Release()
	byRk := map[int32][]transfer{}
	var keys []commKey
	keyOf := map[commKey]int{}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rk, ok1 := rec.Column(0).(*array.Int32)
		s, ok2 := rec.Column(1).(*array.Int64)
		e, ok3 := rec.Column(2).(*array.Int64)
		grp, ok4 := rec.Column(3).(*array.String)
		coll, ok5 := rec.Column(4).(*array.String)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
			return nil, nil, fmt.Errorf("comm_exposed: unexpected column types %s", rec.Schema())
		}
		for i := range int(rec.NumRows()) {
			if rk.IsNull(i) || s.IsNull(i) || e.IsNull(i) || grp.IsNull(i) || coll.IsNull(i) {
				continue
			}
			k := commKey{grp.Value(i), coll.Value(i)}
			ki, ok := keyOf[k]
			if !ok {
				k = commKey{string([]byte(k.grp)), string([]byte(k.coll))} // the batch's memory goes with it
				ki = len(keys)
				keyOf[k] = ki
				keys = append(keys, k)
			}
			byRk[rk.Value(i)] = append(byRk[rk.Value(i)], transfer{ki, s.Value(i), e.Value(i)})
		}
	}
	return byRk, keys, rdr.Err()
}

// coveredNs is how long the disjoint sorted intervals a and b overlap.
func coveredNs(a, b [][2]int64) int64 {
	var ns int64
	for i, j := 0, 0; i < len(a) && j < len(b); {
		if lo, hi := max(a[i][0], b[j][0]), min(a[i][1], b[j][1]); hi > lo {
			ns += hi - lo
		}
		if a[i][1] < b[j][1] {
			i++
		} else {
			j++
		}
	}
	return ns
}

// commExposed is comm_exposed: per group (rank) and key, the length of
// the union of the key's transfers less its overlap with the union of the
// rank's compute; keys whose transfers last no time have no row. As in
// the view's sweep (active_time), intervals that last no time count for
// neither side.
func (tl *timelines) commExposed(byRk map[int32][]transfer) (rk []int32, key []int, exposed []int64) {
	type rows struct {
		key     []int
		exposed []int64
	}
	per := eachGroup(tl, func(g group) (o rows) {
		xs := byRk[g.rk]
		if len(xs) == 0 {
			return o
		}
		var comp [][2]int64
		for _, a := range g.acts {
			if a.class == 0 && a.hasTS && a.hasEnd && a.end > a.ts {
				comp = append(comp, [2]int64{a.ts, a.end})
			}
		}
		comp = mergeIntervals(comp)
		byKey := map[int][][2]int64{}
		var order []int
		for _, x := range xs {
			if x.e <= x.s {
				continue
			}
			if _, ok := byKey[x.key]; !ok {
				order = append(order, x.key)
			}
			byKey[x.key] = append(byKey[x.key], [2]int64{x.s, x.e})
		}
		slices.Sort(order)
		for _, k := range order {
			iv := mergeIntervals(byKey[k])
			var ns int64
			for _, x := range iv {
				ns += x[1] - x[0]
			}
			o.key, o.exposed = append(o.key, k), append(o.exposed, ns-coveredNs(iv, comp))
		}
		return o
	})
	for i, g := range tl.byGroup() {
		for range per[i].key {
			rk = append(rk, g.rk)
		}
		key, exposed = append(key, per[i].key...), append(exposed, per[i].exposed...)
	}
	return rk, key, exposed
}

// fillCommExposed reads the transfers, sweeps them and inserts the rows
// of comm_exposed into the table that stands in for it.
func (tl *timelines) fillCommExposed(ctx context.Context, st *duck.Store) error {
	byRk, keys, err := readTransfers(ctx, st)
	if err != nil {
		return err
	}
	rk, key, exposed := tl.commExposed(byRk)
	sc := arrow.NewSchema([]arrow.Field{{Name: "rk", Type: arrow.PrimitiveTypes.Int32},
		{Name: "grp", Type: arrow.BinaryTypes.String}, {Name: "coll", Type: arrow.BinaryTypes.String},
		{Name: "exposed_ns", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues(rk, nil)
	for _, k := range key {
		b.Field(1).(*array.StringBuilder).Append(keys[k].grp)
		b.Field(2).(*array.StringBuilder).Append(keys[k].coll)
	}
	b.Field(3).(*array.Int64Builder).AppendValues(exposed, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := st.Exec(ctx, "CREATE OR REPLACE TEMP TABLE _comm_exposed_rows (rk INTEGER, grp VARCHAR, coll VARCHAR, exposed_ns BIGINT)"); err != nil {
		return err
	}
	defer st.Exec(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS temp._comm_exposed_rows")
	if err := st.Insert(ctx, "_comm_exposed_rows", rec); err != nil {
		return err
	}
	return st.Exec(ctx, `INSERT INTO comm_exposed BY NAME
SELECT w.run_id, w.rank, r.grp, r.coll, r.exposed_ns FROM _comm_exposed_rows r JOIN analysis_window w ON w.rk = r.rk`)
}
