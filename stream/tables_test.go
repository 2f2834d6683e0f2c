package stream

import (
	"math"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ---- helpers --------------------------------------------------------------

// dictStrings decodes a dictionary column; "<nil>" marks a null row.
func dictStrings(t *testing.T, col arrow.Array) []string {
	t.Helper()
	d, ok := col.(*array.Dictionary)
	if !ok {
		t.Fatalf("column is %T, want *array.Dictionary", col)
	}
	if !arrow.TypeEqual(d.DataType(), DictString) {
		t.Fatalf("dictionary type %s, want %s", d.DataType(), DictString)
	}
	vals := d.Dictionary().(*array.String)
	out := make([]string, d.Len())
	for i := range out {
		if d.IsNull(i) {
			out[i] = "<nil>"
			continue
		}
		out[i] = vals.Value(d.GetValueIndex(i))
	}
	return out
}

// opt is an expected nullable value.
type opt[T comparable] struct {
	v  T
	ok bool
}

func some[T comparable](v T) opt[T] { return opt[T]{v, true} }
func none[T comparable]() opt[T]    { return opt[T]{} }

type numArray[T comparable] interface {
	arrow.Array
	Value(int) T
}

func checkNums[T comparable](t *testing.T, name string, col arrow.Array, want []opt[T]) {
	t.Helper()
	a, ok := col.(numArray[T])
	if !ok {
		t.Fatalf("%s: column is %T", name, col)
	}
	if a.Len() != len(want) {
		t.Fatalf("%s: len %d, want %d", name, a.Len(), len(want))
	}
	nulls := 0
	for i, w := range want {
		if !w.ok {
			nulls++
			if !a.IsNull(i) {
				t.Errorf("%s[%d] = %v, want null", name, i, a.Value(i))
			}
			continue
		}
		if a.IsNull(i) {
			t.Errorf("%s[%d] is null, want %v", name, i, w.v)
		} else if a.Value(i) != w.v {
			t.Errorf("%s[%d] = %v, want %v", name, i, a.Value(i), w.v)
		}
	}
	if a.NullN() != nulls {
		t.Errorf("%s: NullN = %d, want %d", name, a.NullN(), nulls)
	}
}

func col(t *testing.T, rec arrow.RecordBatch, name string) arrow.Array {
	t.Helper()
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		t.Fatalf("record has no single column %q", name)
	}
	return rec.Column(idx[0])
}

// ---- Num, validity ---------------------------------------------------------

// sliceRows appends four rows: a kernel, a comm kernel, a memcpy and a
// runtime call without a step.
func sliceRows(t *SliceTable) {
	s := t.Str
	add := func(step int32, stepOK bool, kind, cat, name string, ts, dur int64) int {
		t.Step.AppendOpt(step, stepOK)
		t.Kind.Append(s.ID(kind))
		t.Cat.Append(s.ID(cat))
		t.Name.Append(s.ID(name))
		t.TS.Append(ts)
		t.Dur.Append(dur)
		t.PID.Append(1)
		t.TID.Append(7)
		return t.Len() - 1
	}
	// row 0: compute kernel
	r := add(3, true, KindKernel, "kernel", "gemm", 1000, 50)
	t.Device.Append(0)
	t.Stream.Append(7)
	t.Correlation.Append(11)
	t.ExternalID.Append(21)
	t.LaunchTS.Append(990)
	t.GridX.Set(r, 4)
	t.BlockX.Set(r, 128)
	t.Registers.Set(r, 32)
	t.Occupancy.Set(r, 0.5)
	// row 1: comm kernel
	r = add(3, true, KindComm, "kernel", "ncclDevKernel_AllReduce", 1100, 200)
	t.Device.Append(0)
	t.Stream.Append(13)
	t.Correlation.Append(12)
	t.ExternalID.AppendNull()
	t.LaunchTS.Append(1090)
	t.CollName.Set(r, s.ID("allreduce"))
	t.CollInElems.Set(r, 1024)
	t.CollDtype.Set(r, s.ID("Float"))
	t.PGRanks.Set(r, s.ID("[0, 1]"))
	// row 2: memcpy
	r = add(3, true, KindMemcpy, "gpu_memcpy", "Memcpy HtoD", 1400, 20)
	t.Device.Append(0)
	t.Stream.Append(7)
	t.Correlation.Append(13)
	t.ExternalID.AppendNull()
	t.LaunchTS.AppendNull()
	t.Bytes.Set(r, 4096)
	t.CopyKind.Set(r, s.ID("HtoD"))
	// row 3: runtime call without a step
	add(0, false, KindRuntime, "cuda_runtime", "cudaLaunchKernel", 985, 8)
	t.Device.AppendNull()
	t.Stream.AppendNull()
	t.Correlation.Append(11)
	t.ExternalID.Append(21)
	t.LaunchTS.AppendNull()
}

func TestSliceTableRecord(t *testing.T) {
	tb := NewSliceTable(NewStrings(), true)
	sliceRows(tb)
	if tb.Len() != 4 {
		t.Fatalf("Len = %d, want 4", tb.Len())
	}
	rec := tb.Record("run-a", "host-1", 2)
	defer rec.Release()
	if !rec.Schema().Equal(SlicesSchema) {
		t.Fatalf("schema = %s", rec.Schema())
	}
	if rec.NumRows() != 4 || rec.NumCols() != 49 {
		t.Fatalf("rows/cols = %d/%d, want 4/49", rec.NumRows(), rec.NumCols())
	}
	for i := range rec.NumCols() {
		if rec.Column(int(i)).Len() != 4 {
			t.Errorf("column %s has %d rows", rec.ColumnName(int(i)), rec.Column(int(i)).Len())
		}
	}
	eqStrings := func(name string, want ...string) {
		t.Helper()
		got := dictStrings(t, col(t, rec, name))
		if len(got) != len(want) {
			t.Fatalf("%s = %q, want %q", name, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s[%d] = %q, want %q", name, i, got[i], want[i])
			}
		}
	}
	n := "<nil>"
	eqStrings("run_id", "run-a", "run-a", "run-a", "run-a")
	eqStrings("host", "host-1", "host-1", "host-1", "host-1")
	eqStrings("kind", "kernel", "comm", "memcpy", "runtime")
	eqStrings("cat", "kernel", "kernel", "gpu_memcpy", "cuda_runtime")
	eqStrings("name", "gemm", "ncclDevKernel_AllReduce", "Memcpy HtoD", "cudaLaunchKernel")
	eqStrings("copy_kind", n, n, "HtoD", n)
	eqStrings("host_mem", n, n, n, n)
	eqStrings("coll_name", n, "allreduce", n, n)
	eqStrings("coll_dtype", n, "Float", n, n)
	eqStrings("pg_ranks", n, "[0, 1]", n, n)
	eqStrings("pg_name", n, n, n, n)

	s32, s64 := some[int32], some[int64]
	n32, n64 := none[int32](), none[int64]()
	checkNums(t, "rank", col(t, rec, "rank"), []opt[int32]{s32(2), s32(2), s32(2), s32(2)})
	checkNums(t, "step", col(t, rec, "step"), []opt[int32]{s32(3), s32(3), s32(3), n32})
	checkNums(t, "ts", col(t, rec, "ts"), []opt[int64]{s64(1000), s64(1100), s64(1400), s64(985)})
	checkNums(t, "dur", col(t, rec, "dur"), []opt[int64]{s64(50), s64(200), s64(20), s64(8)})
	checkNums(t, "pid", col(t, rec, "pid"), []opt[int64]{s64(1), s64(1), s64(1), s64(1)})
	checkNums(t, "device", col(t, rec, "device"), []opt[int32]{s32(0), s32(0), s32(0), n32})
	checkNums(t, "stream", col(t, rec, "stream"), []opt[int64]{s64(7), s64(13), s64(7), n64})
	checkNums(t, "correlation", col(t, rec, "correlation"), []opt[int64]{s64(11), s64(12), s64(13), s64(11)})
	checkNums(t, "external_id", col(t, rec, "external_id"), []opt[int64]{s64(21), n64, n64, s64(21)})
	checkNums(t, "launch_ts", col(t, rec, "launch_ts"), []opt[int64]{s64(990), s64(1090), n64, n64})
	checkNums(t, "grid_x", col(t, rec, "grid_x"), []opt[int32]{s32(4), n32, n32, n32})
	checkNums(t, "grid_y", col(t, rec, "grid_y"), []opt[int32]{n32, n32, n32, n32})
	checkNums(t, "block_x", col(t, rec, "block_x"), []opt[int32]{s32(128), n32, n32, n32})
	checkNums(t, "registers", col(t, rec, "registers"), []opt[int32]{s32(32), n32, n32, n32})
	checkNums(t, "shared_mem", col(t, rec, "shared_mem"), []opt[int64]{n64, n64, n64, n64})
	checkNums(t, "occupancy", col(t, rec, "occupancy"), []opt[float64]{some(0.5), none[float64](), none[float64](), none[float64]()})
	checkNums(t, "bytes", col(t, rec, "bytes"), []opt[int64]{n64, n64, s64(4096), n64})
	checkNums(t, "coll_in_elems", col(t, rec, "coll_in_elems"), []opt[int64]{n64, s64(1024), n64, n64})
	checkNums(t, "coll_out_elems", col(t, rec, "coll_out_elems"), []opt[int64]{n64, n64, n64, n64})
	checkNums(t, "coll_group_size", col(t, rec, "coll_group_size"), []opt[int32]{n32, n32, n32, n32})

	// Nullability in the schema matches the data: non-nullable columns have
	// no nulls.
	for i, f := range rec.Schema().Fields() {
		if !f.Nullable && rec.Column(i).NullN() != 0 {
			t.Errorf("non-nullable column %s has %d nulls", f.Name, rec.Column(i).NullN())
		}
	}
}

func TestSliceTableEmptyRecord(t *testing.T) {
	tb := NewSliceTable(NewStrings(), true)
	rec := tb.Record("run", "h", 0)
	defer rec.Release()
	if rec.NumRows() != 0 || rec.NumCols() != int64(len(SlicesSchema.Fields())) {
		t.Fatalf("rows/cols = %d/%d", rec.NumRows(), rec.NumCols())
	}
	if !rec.Schema().Equal(SlicesSchema) {
		t.Fatalf("schema = %s", rec.Schema())
	}
}

func TestSliceTableReserveKeepsValues(t *testing.T) {
	tb := NewSliceTable(NewStrings(), true)
	sliceRows(tb)
	before := append([]int64(nil), tb.TS.V...)
	tb.Reserve(2) // smaller than Len: no-op
	tb.Reserve(1000)
	if tb.Len() != 4 {
		t.Fatalf("Len after Reserve = %d, want 4", tb.Len())
	}
	for _, c := range []struct {
		name string
		v    []int64
	}{{"TS", tb.TS.V}, {"Dur", tb.Dur.V}, {"PID", tb.PID.V}, {"TID", tb.TID.V},
		{"Stream", tb.Stream.V}, {"Correlation", tb.Correlation.V}, {"ExternalID", tb.ExternalID.V}} {
		if len(c.v) != 4 {
			t.Errorf("%s: len %d after Reserve, want 4", c.name, len(c.v))
		}
		if cap(c.v) < 1000 {
			t.Errorf("%s: cap %d after Reserve(1000)", c.name, cap(c.v))
		}
	}
	for _, c := range []struct {
		name string
		v    []int32
	}{{"Kind", tb.Kind.V}, {"Cat", tb.Cat.V}, {"Name", tb.Name.V}, {"Device", tb.Device.V}} {
		if len(c.v) != 4 || cap(c.v) < 1000 {
			t.Errorf("%s: len/cap %d/%d after Reserve(1000)", c.name, len(c.v), cap(c.v))
		}
	}
	for i, v := range before {
		if tb.TS.V[i] != v {
			t.Errorf("TS[%d] = %d after Reserve, want %d", i, tb.TS.V[i], v)
		}
	}
	// Nulls survive too (the validity bitmap is not touched).
	if tb.Stream.NullCount() != 1 || tb.Stream.Valid(3) || !tb.Stream.Valid(2) {
		t.Errorf("Stream nulls changed by Reserve: count %d", tb.Stream.NullCount())
	}
	// The table still builds the same record, and keeps growing.
	tb.Step.Append(4)
	tb.Kind.Append(tb.Str.ID(KindKernel))
	tb.Cat.Append(tb.Str.ID("kernel"))
	tb.Name.Append(tb.Str.ID("relu"))
	tb.TS.Append(2000)
	tb.Dur.Append(5)
	tb.PID.Append(1)
	tb.TID.Append(7)
	tb.Device.Append(1)
	tb.Stream.Append(7)
	tb.Correlation.Append(14)
	tb.ExternalID.AppendNull()
	tb.LaunchTS.Append(1995)
	rec := tb.Record("r", "h", 0)
	defer rec.Release()
	checkNums(t, "ts", col(t, rec, "ts"), []opt[int64]{some[int64](1000), some[int64](1100), some[int64](1400), some[int64](985), some[int64](2000)})
	checkNums(t, "stream", col(t, rec, "stream"), []opt[int64]{some[int64](7), some[int64](13), some[int64](7), none[int64](), some[int64](7)})
	if got := dictStrings(t, col(t, rec, "name")); got[4] != "relu" || got[0] != "gemm" {
		t.Errorf("name = %q", got)
	}
}

// ---- StepTable, CounterTable ---------------------------------------------------

func TestStepTableRecord(t *testing.T) {
	var st StepTable
	for i, w := range [][2]int64{{100, 200}, {200, 350}, {350, 360}} {
		st.Step.Append(int32(i + 5))
		st.Start.Append(w[0])
		st.End.Append(w[1])
	}
	if st.Len() != 3 {
		t.Fatalf("Len = %d", st.Len())
	}
	rec := st.Record("run-s", 7)
	defer rec.Release()
	if !rec.Schema().Equal(StepsSchema) || rec.NumRows() != 3 {
		t.Fatalf("schema %s rows %d", rec.Schema(), rec.NumRows())
	}
	if got := dictStrings(t, col(t, rec, "run_id")); got[0] != "run-s" || got[1] != "run-s" || got[2] != "run-s" {
		t.Errorf("run_id = %q", got)
	}
	s32, s64 := some[int32], some[int64]
	checkNums(t, "rank", col(t, rec, "rank"), []opt[int32]{s32(7), s32(7), s32(7)})
	checkNums(t, "step", col(t, rec, "step"), []opt[int32]{s32(5), s32(6), s32(7)})
	checkNums(t, "start_ns", col(t, rec, "start_ns"), []opt[int64]{s64(100), s64(200), s64(350)})
	checkNums(t, "end_ns", col(t, rec, "end_ns"), []opt[int64]{s64(200), s64(350), s64(360)})

	var empty StepTable
	er := empty.Record("x", 0)
	defer er.Release()
	if er.NumRows() != 0 || !er.Schema().Equal(StepsSchema) {
		t.Errorf("empty steps record: rows %d", er.NumRows())
	}
}

func TestCounterTableRecord(t *testing.T) {
	build := func() *CounterTable {
		ct := &CounterTable{Str: NewStrings()}
		ct.Device.Append(0)
		ct.TS.Append(10)
		ct.Metric.Append(ct.Str.ID("gpu_util"))
		ct.Value.Append(87.5)
		ct.Device.AppendNull()
		ct.TS.Append(20)
		ct.Metric.Append(ct.Str.ID("host_mem"))
		ct.Value.Append(math.Pi)
		return ct
	}
	for _, known := range []bool{true, false} {
		ct := build()
		rec := ct.Record("run-c", "node-3", 4, known)
		if !rec.Schema().Equal(CountersSchema) || rec.NumRows() != 2 {
			t.Fatalf("schema %s rows %d", rec.Schema(), rec.NumRows())
		}
		wantRank := []opt[int32]{some[int32](4), some[int32](4)}
		if !known {
			wantRank = []opt[int32]{none[int32](), none[int32]()}
		}
		checkNums(t, "rank", col(t, rec, "rank"), wantRank)
		checkNums(t, "device", col(t, rec, "device"), []opt[int32]{some[int32](0), none[int32]()})
		checkNums(t, "ts", col(t, rec, "ts"), []opt[int64]{some[int64](10), some[int64](20)})
		checkNums(t, "value", col(t, rec, "value"), []opt[float64]{some(87.5), some(math.Pi)})
		for name, want := range map[string][]string{
			"run_id": {"run-c", "run-c"},
			"host":   {"node-3", "node-3"},
			"metric": {"gpu_util", "host_mem"},
		} {
			got := dictStrings(t, col(t, rec, name))
			if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
				t.Errorf("%s = %q, want %q", name, got, want)
			}
		}
		rec.Release()
	}
}

func TestCoreSliceTableRecord(t *testing.T) {
	tb := NewSliceTable(NewStrings(), false)
	sliceRows(tb)
	rec := tb.Record("run-a", "host-1", 2)
	defer rec.Release()
	if !rec.Schema().Equal(CoreSchema) || rec.NumCols() != CoreColumns {
		t.Fatalf("core record schema = %v", rec.Schema())
	}
	if rec.NumRows() != 4 {
		t.Errorf("rows = %d", rec.NumRows())
	}
	for i, f := range CoreSchema.Fields() {
		if SlicesSchema.Field(i).Name != f.Name {
			t.Errorf("core column %d is %s, slices has %s", i, f.Name, SlicesSchema.Field(i).Name)
		}
	}
}

// SplitRecords and TakeRecords give the same two records; TakeRecords
// leaves the table its length and no columns.
func TestSplitRecords(t *testing.T) {
	for _, take := range []bool{false, true} {
		t.Run(map[bool]string{false: "split", true: "take"}[take], func(t *testing.T) { testSplit(t, take) })
	}
}

func testSplit(t *testing.T, take bool) {
	str := NewStrings()
	tb := NewSliceTable(str, true)
	// rows 0 and 2 are host ops, 1 and 3 kernels with details
	for i, name := range []string{"aten::mm", "gemm", "aten::add", "nccl"} {
		tb.Kind.Append(str.ID("k"))
		tb.Cat.Append(str.ID("c"))
		tb.Name.Append(str.ID(name))
		tb.TS.Append(int64(100 * i))
		tb.Dur.Append(10)
		tb.PID.Append(1)
		tb.TID.Append(2)
		if i%2 == 1 {
			tb.Device.Append(0)
			tb.GridX.Set(i, int32(10+i))
			tb.MarkDetail(i)
		} else {
			tb.Device.AppendNull()
		}
		tb.Stream.AppendNull()
		tb.Correlation.AppendOpt(int64(i), i != 2)
		tb.ExternalID.AppendNull()
	}
	tb.Step = Nulls[int32](4)
	tb.Step.Set(3, 7)
	tb.LaunchTS = Nulls[int64](4)
	if tb.DetailRows() != 2 {
		t.Fatalf("DetailRows = %d", tb.DetailRows())
	}
	var core, detail arrow.RecordBatch
	if take {
		// one core row a record: the two host ops come as two records
		defer func(n int) { takeChunkRows = n }(takeChunkRows)
		takeChunkRows = 1
		var cores []arrow.RecordBatch
		cores, detail = tb.TakeRecords("r", "h", 0)
		if len(cores) != 2 || cores[0].NumRows() != 1 || cores[1].NumRows() != 1 {
			t.Fatalf("core records %v, want two of one row", cores)
		}
		core = concatRecords(t, cores)
		if tb.Len() != 4 || tb.TS.V != nil || tb.Name.V != nil || tb.Step.V != nil {
			t.Errorf("after TakeRecords: Len %d, columns TS %v name %v step %v", tb.Len(), tb.TS.V, tb.Name.V, tb.Step.V)
		}
	} else {
		core, detail = tb.SplitRecords("r", "h", 0)
	}
	defer core.Release()
	defer detail.Release()
	if !core.Schema().Equal(CoreSchema) || !detail.Schema().Equal(SlicesSchema) {
		t.Fatal("schemas")
	}
	if core.NumRows() != 2 || detail.NumRows() != 2 {
		t.Fatalf("rows core %d detail %d", core.NumRows(), detail.NumRows())
	}
	col := func(rec arrow.RecordBatch, name string) arrow.Array {
		return rec.Column(rec.Schema().FieldIndices(name)[0])
	}
	names := func(rec arrow.RecordBatch) []string {
		d := col(rec, "name").(*array.Dictionary)
		var out []string
		for i := 0; i < d.Len(); i++ {
			out = append(out, d.Dictionary().(*array.String).Value(d.GetValueIndex(i)))
		}
		return out
	}
	if got := names(core); got[0] != "aten::mm" || got[1] != "aten::add" {
		t.Errorf("core names %v", got)
	}
	if got := names(detail); got[0] != "gemm" || got[1] != "nccl" {
		t.Errorf("detail names %v", got)
	}
	grid := col(detail, "grid_x").(*array.Int32)
	if grid.Value(0) != 11 || grid.Value(1) != 13 || grid.NullN() != 0 {
		t.Errorf("grid_x %v", grid)
	}
	corr := col(core, "correlation").(*array.Int64)
	if corr.Value(0) != 0 || !corr.IsNull(1) {
		t.Errorf("core correlation %v", corr)
	}
	step := col(detail, "step").(*array.Int32)
	if !step.IsNull(0) || step.Value(1) != 7 {
		t.Errorf("detail step %v", step)
	}
	dev := col(core, "device").(*array.Int32)
	if dev.NullN() != 2 {
		t.Errorf("core device %v", dev)
	}
}

func TestSparseFill(t *testing.T) {
	for _, tc := range []struct {
		name           string
		rows, fill     []int32
		vals, fillVals []int64
		wantRows       []int32
		wantVals       []int64
	}{
		{"empty", nil, []int32{1, 3}, nil, []int64{10, 30}, []int32{1, 3}, []int64{10, 30}},
		{"existing wins", []int32{1, 2}, []int32{1, 3}, []int64{5, 6}, []int64{10, 30}, []int32{1, 2, 3}, []int64{5, 6, 30}},
		{"interleaved", []int32{0, 4, 9}, []int32{2, 5, 10}, []int64{1, 2, 3}, []int64{7, 8, 9}, []int32{0, 2, 4, 5, 9, 10}, []int64{1, 7, 2, 8, 3, 9}},
		{"nothing to fill", []int32{0}, nil, []int64{1}, nil, []int32{0}, []int64{1}},
	} {
		s := Sparse[int64]{Rows: tc.rows, Vals: tc.vals}
		s.Fill(tc.fill, tc.fillVals)
		if !slices.Equal(s.Rows, tc.wantRows) || !slices.Equal(s.Vals, tc.wantVals) {
			t.Errorf("%s: rows %v vals %v, want %v %v", tc.name, s.Rows, s.Vals, tc.wantRows, tc.wantVals)
		}
	}
}

// concatRecords is recs as one record (releasing them).
func concatRecords(t *testing.T, recs []arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	cols := make([]arrow.Array, recs[0].NumCols())
	n := int64(0)
	for _, r := range recs {
		n += r.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for k, r := range recs {
			parts[k] = r.Column(i)
		}
		c, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			t.Fatalf("concatenate %s: %v", recs[0].ColumnName(i), err)
		}
		defer c.Release()
		cols[i] = c
	}
	out := array.NewRecordBatch(recs[0].Schema(), cols, n)
	for _, r := range recs {
		r.Release()
	}
	return out
}

// Reserve gives the columns room for exactly the rows asked (append's own
// rounding would add up to a quarter more), keeping what they hold.
func TestReserveExact(t *testing.T) {
	tb := NewSliceTable(NewStrings(), true)
	for i := range 1000 {
		tb.TS.Append(int64(i))
		tb.Name.Append(int32(i))
	}
	tb.Reserve(4321)
	if cap(tb.TS.V) != 4321 || cap(tb.Name.V) != 4321 || cap(tb.ExternalID.V) != 4321 {
		t.Errorf("capacities %d %d %d, want 4321", cap(tb.TS.V), cap(tb.Name.V), cap(tb.ExternalID.V))
	}
	if len(tb.TS.V) != 1000 || tb.TS.V[999] != 999 || tb.Name.V[500] != 500 {
		t.Errorf("values lost: len %d", len(tb.TS.V))
	}
	tb.Reserve(10) // never shrinks
	if cap(tb.TS.V) != 4321 {
		t.Errorf("cap %d after a smaller Reserve", cap(tb.TS.V))
	}
}
