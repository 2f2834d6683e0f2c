package detectors

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/trainscope/trainscope/sql/duck"
)

// Timelines: the shared views that sweep every GPU activity of a rank's
// window (gpu_busy: interval_union; gpu_class_time: active_time) are
// computed here, in one pass over one read of the window's GPU rows,
// rather than by DuckDB's window functions over the same rows twice.
// The views stay the definition (sql/schema/040_views.sql, and what
// `trainscope sql` reads); the tables this pass fills stand in for them
// during a detector pass, as the other shared views' tables do, and hold
// the same rows (TestTimelinesMatchTheViews).
//
// syn8 (142K GPU rows, 8 ranks, a loaded machine): the two views took
// 354 ms (295 ms of CPU) at best of 10, the read, both sweeps and the
// inserts here 192 ms (186 ms of CPU) (bench/RESULTS.md, "timelines
// once").

// timelineViews are the shared views this pass computes, in the order
// materialize meets them.
var timelineViews = map[string]bool{"gpu_class_time": true, "gpu_busy": true, "gpu_mem_exposed": true}

// timelineTypes are the column definitions of each view's table: those
// the views have (DESCRIBE), so that a detector reads the same types.
var timelineTypes = map[string]string{
	"gpu_class_time":  "run_id VARCHAR, rank INTEGER, state HUGEINT, ns BIGINT",
	"gpu_busy":        "run_id VARCHAR, rank INTEGER, start_ns BIGINT, end_ns BIGINT, rk INTEGER",
	"gpu_mem_exposed": "run_id VARCHAR, rank INTEGER, op VARCHAR, exposed_ns HUGEINT",
}

// memOps are the memory operations gpu_mem_exposed names first, by their
// index (gpuActivity.op; 0 is compute). A pass's other copy kinds
// ('Memcpy HtoH', 'Memcpy AtoD', ...) follow them by name
// (timelines.opNames): each is swept on its own, as the view sweeps each
// operation.
var memOps = [...]string{1: "Memcpy HtoD", 2: "Memcpy DtoH", 3: "Memcpy DtoD", 4: "Memcpy PtoP", 5: "Memset", 6: "Memcpy other"}

// the class weights of gpu_class_time's state (see its view)
const (
	wComp int64 = 1
	wComm int64 = 1 << 20
	wMem  int64 = 1 << 40
	wWait int64 = 1 << 50
)

// gpuActivity is one row of the window's GPU work, as the views see it:
// its group (analysis_window.rk), start, end, class and the wait of a
// collective for its last member (0: none).
type gpuActivity struct {
	rk      int32
	class   uint8  // 0 COMP, 1 COMM, 2 MEM
	op      uint16 // MEM: its operation, an index into timelines.opNames
	ts, end int64
	wait    int64
	hasEnd  bool
	hasTS   bool
}

// timelineQuery reads the GPU rows of the window with each collective's
// wait, as gpu_class_time's view joins them (a row that matches several
// waits comes once per match, as there).
const timelineQuery = `WITH ci AS (
    SELECT run_id, rank, stream, ts, wait_ns FROM collective_instances WHERE wait_ns > 0
)
SELECT g.rk, g.ts, g.end_ts,
       CASE g.class WHEN 'COMP' THEN 0 WHEN 'COMM' THEN 1 ELSE 2 END::UTINYINT AS c,
       coalesce(ci.wait_ns, 0)::BIGINT AS wait_ns,
       CASE WHEN g.class <> 'MEM' THEN NULL WHEN g.kind = 'memset' THEN 'Memset'
            ELSE 'Memcpy ' || coalesce(g.copy_kind, 'other') END AS op
FROM gpu_window g
LEFT JOIN ci ON g.class = 'COMM' AND ci.run_id = g.run_id AND ci.rank = g.rank
            AND ci.stream IS NOT DISTINCT FROM g.stream AND ci.ts = g.ts`

// timelines holds the pass's read of the window and what it computed.
type timelines struct {
	acts   []gpuActivity
	groups map[int32]windowRank // rk -> run and rank
	read   time.Duration
	// the rows by group (byGroup)
	groupsOf []group
	// the memory operations by index (gpuActivity.op): 0 compute, memOps,
	// then the pass's other ones by name
	opNames []string
	// workers sweeps run at once, one group (rank) each (1 or less: one)
	workers int
}

type windowRank struct {
	run  string
	rank int32
}

// readTimelines reads the window's GPU rows (collective_instances must be
// materialized before: its view would be computed again here); the sweeps
// run on workers goroutines, one rank at a time each.
func readTimelines(ctx context.Context, st *duck.Store, workers int) (*timelines, error) {
	t0 := time.Now()
	tl := &timelines{groups: map[int32]windowRank{}, workers: workers, opNames: memOps[:]}
	opOf := map[string]uint16{}
	for i, n := range memOps {
		if i > 0 {
			opOf[n] = uint16(i)
		}
	}
	rows, err := st.Query(ctx, "SELECT rk, run_id, rank FROM analysis_window")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var rk, rank int32
		var run string
		if err := rows.Scan(&rk, &run, &rank); err != nil {
			rows.Close()
			return nil, err
		}
		tl.groups[rk] = windowRank{run, rank}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rdr, err := st.QueryArrow(ctx, timelineQuery)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rk, ok1 := rec.Column(0).(*array.Int32)
		ts, ok2 := rec.Column(1).(*array.Int64)
		end, ok3 := rec.Column(2).(*array.Int64)
		cls, ok4 := rec.Column(3).(*array.Uint8)
		wait, ok5 := rec.Column(4).(*array.Int64)
		op, ok6 := rec.Column(5).(*array.String)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
			return nil, fmt.Errorf("timelines: unexpected column types %s", rec.Schema())
		}
		for i := range int(rec.NumRows()) {
			if rk.IsNull(i) {
				continue // no window row: the views' joins drop it
			}
			a := gpuActivity{rk: rk.Value(i), class: cls.Value(i),
				ts: ts.Value(i), hasTS: ts.IsValid(i), end: end.Value(i), hasEnd: end.IsValid(i), wait: wait.Value(i)}
			if a.class == 2 && op.IsValid(i) {
				n := op.Value(i)
				o, ok := opOf[n]
				if !ok {
					if len(tl.opNames) > math.MaxUint16 {
						return nil, fmt.Errorf("timelines: more than %d memory operations", math.MaxUint16)
					}
					o = uint16(len(tl.opNames))
					n = strings.Clone(n) // the batch's memory goes with it
					opOf[n] = o
					tl.opNames = append(tl.opNames, n)
				}
				a.op = o
			}
			tl.acts = append(tl.acts, a)
		}
	}
	if err := rdr.Err(); err != nil {
		return nil, err
	}
	// the other operations by name, whatever order the rows came in
	if extra := tl.opNames[len(memOps):]; len(extra) > 1 {
		sorted := slices.Clone(extra)
		slices.Sort(sorted)
		for i, n := range sorted {
			opOf[n] = uint16(len(memOps) + i)
		}
		for i := range tl.acts {
			if a := &tl.acts[i]; a.op >= uint16(len(memOps)) {
				a.op = opOf[tl.opNames[a.op]]
			}
		}
		tl.opNames = append(tl.opNames[:len(memOps):len(memOps)], sorted...)
	}
	tl.read = time.Since(t0)
	return tl, nil
}

// busy is gpu_busy: per group, the islands of the union of its rows'
// [ts, end_ts] (interval_union: touching intervals merge, empty ones
// count).
func (tl *timelines) busy() (rk []int32, start, end []int64) {
	type islands struct{ start, end []int64 }
	per := eachGroup(tl, func(g group) (o islands) {
		iv := make([][2]int64, 0, len(g.acts))
		for _, a := range g.acts {
			if a.hasTS && a.hasEnd && a.end >= a.ts {
				iv = append(iv, [2]int64{a.ts, a.end})
			}
		}
		for _, x := range mergeIntervals(iv) {
			o.start, o.end = append(o.start, x[0]), append(o.end, x[1])
		}
		return o
	})
	for i, g := range tl.byGroup() {
		for range per[i].start {
			rk = append(rk, g.rk)
		}
		start, end = append(start, per[i].start...), append(end, per[i].end...)
	}
	return rk, start, end
}

// mergeIntervals sorts iv and merges it into disjoint intervals (touching
// ones merge: their union's length is the same).
func mergeIntervals(iv [][2]int64) [][2]int64 {
	slices.SortFunc(iv, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	out := iv[:0]
	for _, x := range iv {
		if n := len(out); n > 0 && x[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], x[1])
			continue
		}
		out = append(out, x)
	}
	return out
}

// eachGroup runs f on every group, tl.workers groups at once, and returns
// its results in the groups' order: the rows come out as one goroutine
// would have made them.
func eachGroup[T any](tl *timelines, f func(group) T) []T {
	gs := tl.byGroup()
	out := make([]T, len(gs))
	w := min(max(tl.workers, 1), len(gs))
	if w <= 1 {
		for i, g := range gs {
			out[i] = f(g)
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(gs) {
					return
				}
				out[i] = f(gs[i])
			}
		})
	}
	wg.Wait()
	return out
}

// group is one group's (rank's) rows.
type group struct {
	rk   int32
	acts []gpuActivity
}

// byGroup splits the rows by group, in the order of their ids.
func (tl *timelines) byGroup() []group {
	if tl.groupsOf != nil {
		return tl.groupsOf
	}
	at := map[int32]int{}
	var out []group
	for _, a := range tl.acts {
		i, ok := at[a.rk]
		if !ok {
			i = len(out)
			at[a.rk] = i
			out = append(out, group{rk: a.rk})
		}
		out[i].acts = append(out[i].acts, a)
	}
	slices.SortFunc(out, func(a, b group) int { return int(a.rk) - int(b.rk) })
	tl.groupsOf = out
	return out
}

// classTime is gpu_class_time: per group, how long each state (the
// weighted count of active intervals of each class) lasted. ok is false
// where a state would not fit 64 bits (thousands of waits at once): the
// view, whose sums are 128 bits, then computes it.
func (tl *timelines) classTime() (rk []int32, state, ns []int64, ok bool) {
	type tw struct{ t, d int64 }
	type states struct {
		state, ns []int64
		ok        bool
	}
	per := eachGroup(tl, func(g group) (o states) {
		edges := make([]tw, 0, 2*len(g.acts))
		add := func(s, e, w int64) {
			if e > s {
				edges = append(edges, tw{s, w}, tw{e, -w})
			}
		}
		for _, a := range g.acts {
			if !a.hasTS || !a.hasEnd {
				continue
			}
			w := wMem
			switch a.class {
			case 0:
				w = wComp
			case 1:
				w = wComm
			}
			add(a.ts+a.wait, a.end, w)
			if a.wait > 0 {
				add(a.ts, a.ts+a.wait, wWait)
			}
		}
		slices.SortFunc(edges, func(a, b tw) int { return cmp.Compare(a.t, b.t) })
		sums := map[int64]int64{}
		var order []int64
		var cur int64
		for i := 0; i < len(edges); {
			t := edges[i].t
			// every edge at t: the state after them holds until the next time
			j := i
			for ; j < len(edges) && edges[j].t == t; j++ {
				d := edges[j].d
				if (d > 0 && cur > math.MaxInt64-d) || (d < 0 && cur < math.MinInt64-d) {
					return o
				}
				cur += d
			}
			if j < len(edges) && cur != 0 {
				if _, seen := sums[cur]; !seen {
					order = append(order, cur)
				}
				sums[cur] += edges[j].t - t
			}
			i = j
		}
		for _, st := range order {
			o.state, o.ns = append(o.state, st), append(o.ns, sums[st])
		}
		o.ok = true
		return o
	})
	for i, g := range tl.byGroup() {
		if !per[i].ok {
			return nil, nil, nil, false
		}
		for range per[i].state {
			rk = append(rk, g.rk)
		}
		state, ns = append(state, per[i].state...), append(ns, per[i].ns...)
	}
	return rk, state, ns, true
}

// memExposed is gpu_mem_exposed: per group and memory operation, the
// time it ran while no compute did (digit: the operation's index in
// tl.opNames). ok is false where a count would reach 2^31, beyond the
// view's BIGINT states (never in practice).
func (tl *timelines) memExposed() (rk []int32, digit, ns []int64, ok bool) {
	type tw struct {
		t int64
		c uint16 // 0: compute, else the operation's index
		d int64
	}
	type exposed struct {
		digit, ns []int64
		ok        bool
	}
	per := eachGroup(tl, func(g group) (o exposed) {
		edges := make([]tw, 0, 2*len(g.acts))
		for _, a := range g.acts {
			if !a.hasTS || !a.hasEnd || a.end <= a.ts || a.class == 1 {
				continue
			}
			c := uint16(0)
			if a.class == 2 {
				c = a.op
			}
			edges = append(edges, tw{a.ts, c, 1}, tw{a.end, c, -1})
		}
		slices.SortFunc(edges, func(a, b tw) int { return cmp.Compare(a.t, b.t) })
		n := make([]int64, len(tl.opNames))
		exp := make([]int64, len(tl.opNames))
		seen := make([]bool, len(tl.opNames))
		for i := 0; i < len(edges); {
			t := edges[i].t
			j := i
			for ; j < len(edges) && edges[j].t == t; j++ {
				n[edges[j].c] += edges[j].d
				if n[edges[j].c] >= 1<<31 {
					return o
				}
			}
			if j < len(edges) && n[0] == 0 {
				for d := 1; d < len(n); d++ {
					if n[d] > 0 {
						exp[d] += edges[j].t - t
						seen[d] = true
					}
				}
			}
			i = j
		}
		for d := 1; d < len(n); d++ {
			if seen[d] {
				o.digit, o.ns = append(o.digit, int64(d)), append(o.ns, exp[d])
			}
		}
		o.ok = true
		return o
	})
	for i, g := range tl.byGroup() {
		if !per[i].ok {
			return nil, nil, nil, false
		}
		for range per[i].digit {
			rk = append(rk, g.rk)
		}
		digit, ns = append(digit, per[i].digit...), append(ns, per[i].ns...)
	}
	return rk, digit, ns, true
}

// fill inserts the rows of view v (gpu_busy or gpu_class_time) into the
// table that stands in for it. ok is false where the view must compute
// them itself.
func (tl *timelines) fill(ctx context.Context, st *duck.Store, v string) (ok bool, err error) {
	var rk []int32
	var cols [][]int64
	var names []string
	switch v {
	case "gpu_busy":
		var s, e []int64
		rk, s, e = tl.busy()
		cols, names = [][]int64{s, e}, []string{"start_ns", "end_ns"}
	case "gpu_class_time":
		var state, ns []int64
		rk, state, ns, ok = tl.classTime()
		if !ok {
			return false, nil
		}
		cols, names = [][]int64{state, ns}, []string{"state", "ns"}
	case "comm_exposed":
		return true, tl.fillCommExposed(ctx, st) // timelines_comm.go
	case "gpu_mem_exposed":
		var digit, ns []int64
		rk, digit, ns, ok = tl.memExposed()
		if !ok {
			return false, nil
		}
		cols, names = [][]int64{digit, ns}, []string{"op", "exposed_ns"}
	default:
		return false, nil
	}
	// the rows go in by their group, and take its run and rank from
	// analysis_window in DuckDB: appending the run's name to each of them
	// from here cost more than the sweeps
	sc := arrow.NewSchema([]arrow.Field{{Name: "rk", Type: arrow.PrimitiveTypes.Int32},
		{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues(rk, nil)
	b.Field(1).(*array.Int64Builder).AppendValues(cols[0], nil)
	b.Field(2).(*array.Int64Builder).AppendValues(cols[1], nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := st.Exec(ctx, "CREATE OR REPLACE TEMP TABLE _timeline_rows (rk INTEGER, a BIGINT, b BIGINT)"); err != nil {
		return false, err
	}
	defer st.Exec(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS temp._timeline_rows")
	if err := st.Insert(ctx, "_timeline_rows", rec); err != nil {
		return false, err
	}
	sel := fmt.Sprintf("w.run_id, w.rank, r.a AS %s, r.b AS %s", names[0], names[1])
	if v == "gpu_mem_exposed" {
		var op strings.Builder
		for d := 1; d < len(tl.opNames); d++ {
			fmt.Fprintf(&op, " WHEN %d THEN '%s'", d, strings.ReplaceAll(tl.opNames[d], "'", "''"))
		}
		sel = "w.run_id, w.rank, CASE r.a" + op.String() + " END AS op, r.b AS exposed_ns"
	}
	if v == "gpu_busy" {
		sel += ", r.rk"
	}
	return true, st.Exec(ctx, fmt.Sprintf("INSERT INTO %s BY NAME SELECT %s FROM _timeline_rows r JOIN analysis_window w ON w.rk = r.rk", v, sel))
}
