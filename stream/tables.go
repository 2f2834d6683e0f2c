package stream

import (
	"runtime"
	"sort"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// SliceTable accumulates rows of the slices table column by column. Run id,
// rank and host are constant per table and set before Record is called.
// Dictionary columns hold ids from Str. A table with Detail false keeps
// only the core columns (see CoreColumns) and its Record has CoreSchema.
type SliceTable struct {
	Str    *Strings
	Detail bool

	detailRows []int32
	taken      int // rows handed over by TakeRecords, whose columns are gone

	// narrow (ReserveNarrow): rows keep their thread in threadIdx, not in
	// PID and TID (see AppendThread)
	narrow    bool
	threads   threadList
	threadIdx []int32

	Step                                      Num[int32]
	Kind, Cat, Name                           Dict
	TS, Dur, PID, TID                         Num[int64]
	Device                                    Num[int32]
	Stream, Correlation, ExternalID, LaunchTS Num[int64]
	// SelfDur is a host slice's duration minus its direct children's.
	SelfDur Num[int64]
	// StackID is a host slice's call stack, an index into Stacks.
	StackID Num[int32]
	Stacks  []StackNode
	// GPUBusyDur is the part of a host slice during which the GPU was busy.
	GPUBusyDur Num[int64]
	// kernel, memcpy and collective details: present on few rows
	GridX, GridY, GridZ, BlockX, BlockY, BlockZ  Sparse[int32]
	Registers                                    Sparse[int32]
	SharedMem                                    Sparse[int64]
	Occupancy                                    Sparse[float64]
	Bytes                                        Sparse[int64]
	CopyKind, HostMem                            SparseDict
	CollName                                     SparseDict
	CollInElems, CollOutElems                    Sparse[int64]
	CollDtype                                    SparseDict
	CollGroupSize                                Sparse[int32]
	PGName, PGDesc, PGRanks, CollAlgo, CollProto SparseDict
	// A host operator's modelled cost (gpu.OpCost), from its input shapes:
	// FLOPs and their dtype, its class, its shape, the bytes it must move,
	// and the GPU time and count of the kernels launched inside it
	Flops      Sparse[int64]
	FlopsDtype SparseDict
	OpClass    SparseDict
	OpShape    SparseDict
	OpBytes    Sparse[int64]
	OpGPUDur   Sparse[int64]
	OpKernels  Sparse[int32]
	OpKernel   SparseDict // the longest kernel it launched
}

// NewSliceTable returns an empty table over the given string table; detail
// says whether its rows carry kernel, memcpy or collective columns.
func NewSliceTable(str *Strings, detail bool) *SliceTable {
	return &SliceTable{Str: str, Detail: detail}
}

// Len is the number of rows.
func (t *SliceTable) Len() int { return max(len(t.TS.V), t.taken) }

// DropRows forgets t's columns but keeps its length and its call stacks,
// for a reader that hands its rows over another way (kineto's two-pass
// read of a big trace).
func (t *SliceTable) DropRows() {
	*t = SliceTable{Str: t.Str, Detail: t.Detail, Stacks: t.Stacks, taken: t.Len()}
}

// DropThreads forgets a narrow table's threads (ReserveNarrow), as
// assigning PID and TID an empty column does a table's otherwise.
func (t *SliceTable) DropThreads() {
	t.PID, t.TID = Num[int64]{}, Num[int64]{}
	t.threads, t.threadIdx = threadList{}, nil
}

// Record wraps the columns as one record batch without copying them.
func (t *SliceTable) Record(runID, host string, rank int32) arrow.RecordBatch {
	n := t.Len()
	// columns a reader fills at the end; a table built without them is null there
	if len(t.Step.V) != n {
		t.Step = Nulls[int32](n)
	}
	if len(t.LaunchTS.V) != n {
		t.LaunchTS = Nulls[int64](n)
	}
	if len(t.SelfDur.V) != n {
		t.SelfDur = Nulls[int64](n)
	}
	if len(t.StackID.V) != n {
		t.StackID = Nulls[int32](n)
	}
	if len(t.GPUBusyDur.V) != n {
		t.GPUBusyDur = Nulls[int64](n)
	}
	runIdx, hostIdx := t.Str.ID(runID), t.Str.ID(host)
	dict := t.Str.data()
	defer dict.Release()
	cols := []arrow.Array{
		constDictID(runIdx, n, dict),
		constI32(rank, n),
		constDictID(hostIdx, n, dict),
		t.Step.array(i32),
		t.Kind.dictArray(dict), t.Cat.dictArray(dict), t.Name.dictArray(dict),
		t.TS.array(i64), t.Dur.array(i64), t.PID.array(i64), t.TID.array(i64),
		t.Device.array(i32),
		t.Stream.array(i64), t.Correlation.array(i64), t.ExternalID.array(i64), t.LaunchTS.array(i64),
		t.SelfDur.array(i64), t.StackID.array(i32), t.GPUBusyDur.array(i64),
	}
	if !t.Detail {
		return NewRecord(CoreSchema, cols, n)
	}
	cols = append(cols,
		sp32(&t.GridX, n), sp32(&t.GridY, n), sp32(&t.GridZ, n),
		sp32(&t.BlockX, n), sp32(&t.BlockY, n), sp32(&t.BlockZ, n),
		sp32(&t.Registers, n), sp64(&t.SharedMem, n), spf64(&t.Occupancy, n),
		sp64(&t.Bytes, n), t.CopyKind.dictArray(n, dict), t.HostMem.dictArray(n, dict),
		t.CollName.dictArray(n, dict), sp64(&t.CollInElems, n), sp64(&t.CollOutElems, n),
		t.CollDtype.dictArray(n, dict), sp32(&t.CollGroupSize, n),
		t.PGName.dictArray(n, dict), t.PGDesc.dictArray(n, dict), t.PGRanks.dictArray(n, dict),
		t.CollAlgo.dictArray(n, dict), t.CollProto.dictArray(n, dict),
		sp64(&t.Flops, n), t.FlopsDtype.dictArray(n, dict),
		t.OpClass.dictArray(n, dict), t.OpShape.dictArray(n, dict),
		sp64(&t.OpBytes, n), sp64(&t.OpGPUDur, n), sp32(&t.OpKernels, n), t.OpKernel.dictArray(n, dict),
	)
	return NewRecord(SlicesSchema, cols, n)
}

// StepTable accumulates rows of the steps table.
type StepTable struct {
	Step       Num[int32]
	Start, End Num[int64]
}

// Len is the number of rows.
func (t *StepTable) Len() int { return len(t.Step.V) }

// Record wraps the columns as one record batch.
func (t *StepTable) Record(runID string, rank int32) arrow.RecordBatch {
	n := t.Len()
	cols := []arrow.Array{
		constDict(runID, n),
		constI32(rank, n),
		t.Step.array(i32), t.Start.array(i64), t.End.array(i64),
	}
	return NewRecord(StepsSchema, cols, n)
}

// CounterTable accumulates rows of the counters table.
type CounterTable struct {
	Str    *Strings
	Device Num[int32]
	TS     Num[int64]
	Metric Dict
	Value  Num[float64]
	// Labels is the labels column; left empty, every row's labels are null.
	Labels Dict
}

// Len is the number of rows.
func (t *CounterTable) Len() int { return len(t.TS.V) }

// Record wraps the columns as one record batch.
func (t *CounterTable) Record(runID, host string, rank int32, rankKnown bool) arrow.RecordBatch {
	n := t.Len()
	runIdx, hostIdx := t.Str.ID(runID), t.Str.ID(host)
	dict := t.Str.data()
	defer dict.Release()
	var ranks Num[int32]
	for range n {
		ranks.AppendOpt(rank, rankKnown)
	}
	labels := &t.Labels
	if labels.Len() != n {
		labels = &Dict{}
		for range n {
			labels.AppendNull()
		}
	}
	cols := []arrow.Array{
		constDictID(runIdx, n, dict),
		ranks.array(i32),
		constDictID(hostIdx, n, dict),
		t.Device.array(i32), t.TS.array(i64), t.Metric.dictArray(dict), t.Value.array(f64),
		labels.dictArray(dict),
	}
	return NewRecord(CountersSchema, cols, n)
}

// NewRecord is a record batch of n rows over cols, which it takes over
// (their references are released into the record).
func NewRecord(schema *arrow.Schema, cols []arrow.Array, n int) arrow.RecordBatch {
	rec := array.NewRecordBatch(schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// constDict is a dictionary column whose every row is s, over a dictionary
// of its own.
func constDict(s string, n int) arrow.Array {
	one := NewStrings()
	id := one.ID(s)
	d := one.data()
	defer d.Release()
	return constDictID(id, n, d)
}

func constDictID(id int32, n int, dict *array.Data) arrow.Array {
	var c Dict
	c.V = make([]int32, n)
	for i := range c.V {
		c.V[i] = id
	}
	return c.dictArray(dict)
}

func constI32(v int32, n int) arrow.Array {
	var c Num[int32]
	c.V = make([]int32, n)
	for i := range c.V {
		c.V[i] = v
	}
	return c.array(i32)
}

func sp32(s *Sparse[int32], n int) arrow.Array {
	c := s.Dense(n)
	return c.array(i32)
}

func sp64(s *Sparse[int64], n int) arrow.Array {
	c := s.Dense(n)
	return c.array(i64)
}

func spf64(s *Sparse[float64], n int) arrow.Array {
	c := s.Dense(n)
	return c.array(f64)
}

// Reserve sets the capacity of the dense columns for about n rows, so that
// a reader that knows its input size avoids regrowing them.
func (t *SliceTable) Reserve(n int) {
	if n <= t.Len() {
		return
	}
	for _, c := range []*Num[int64]{&t.TS, &t.Dur, &t.PID, &t.TID, &t.Stream, &t.Correlation, &t.ExternalID} {
		c.V = reserve(c.V, n)
	}
	for _, c := range []*Num[int32]{&t.Kind.Num, &t.Cat.Num, &t.Name.Num, &t.Device} {
		c.V = reserve(c.V, n)
	}
}

// ReserveNarrow is Reserve for a reader that appends only the columns a
// trace's whole-file resolution reads (kind, name, ts, dur, thread,
// correlation): kineto's first pass over a big trace. It makes the table
// narrow: each row's thread goes to an index (AppendThread), not to PID
// and TID. Call it before the first row.
func (t *SliceTable) ReserveNarrow(n int) {
	t.narrow = t.narrow || t.Len() == 0
	for _, c := range []*Num[int64]{&t.TS, &t.Dur, &t.Correlation} {
		c.V = reserve(c.V, n)
	}
	if t.narrow {
		t.threadIdx = reserve(t.threadIdx, n)
	} else {
		t.PID.V, t.TID.V = reserve(t.PID.V, n), reserve(t.TID.V, n)
	}
	for _, c := range []*Num[int32]{&t.Kind.Num, &t.Name.Num} {
		c.V = reserve(c.V, n)
	}
}

// reserve returns v with room for exactly n elements (slices.Grow rounds
// up by append's rule: asked for 4.56M rows of a 3.39M-row column, it made
// room for 5.30M).
func reserve[T any](v []T, n int) []T {
	if n <= cap(v) {
		return v
	}
	w := make([]T, len(v), n)
	copy(w, v)
	return w
}

// MarkDetail records that row (the last one appended, or any earlier one,
// in increasing order) carries detail columns and belongs in slices_detail.
func (t *SliceTable) MarkDetail(row int) {
	t.detailRows = append(t.detailRows, int32(row))
}

// DetailRows is how many rows were marked with MarkDetail.
func (t *SliceTable) DetailRows() int { return len(t.detailRows) }

// SplitRecords builds the two records a table is stored as: the rows
// without details (CoreSchema, for slices_core) and the rows marked with
// MarkDetail (SlicesSchema, for slices_detail). Either may have no rows.
func (t *SliceTable) SplitRecords(runID, host string, rank int32) (core, detail arrow.RecordBatch) {
	cores, detail := t.split(runID, host, rank, false, 0)
	return cores[0], detail
}

// takeChunkRows is how many rows each core record of TakeRecords holds at
// most (a variable for tests).
var takeChunkRows = 1 << 18

// TakeRecords is SplitRecords that drops each of t's columns once it is
// copied, so that a big trace is never held twice, and cuts the core rows
// into records of 256K rows, each freed on its own once inserted;
// afterwards t keeps only its length (Len) and its call stacks.
func (t *SliceTable) TakeRecords(runID, host string, rank int32) (core []arrow.RecordBatch, detail arrow.RecordBatch) {
	return t.split(runID, host, rank, true, takeChunkRows)
}

func (t *SliceTable) split(runID, host string, rank int32, take bool, chunk int) (core []arrow.RecordBatch, detail arrow.RecordBatch) {
	n := t.Len()
	isDetail := make([]bool, n)
	for _, r := range t.detailRows {
		isDetail[r] = true
	}
	var coreIdx, detailIdx []int32
	pos := make([]int32, n) // row -> index within its part
	for i := range n {
		if isDetail[i] {
			pos[i] = int32(len(detailIdx))
			detailIdx = append(detailIdx, int32(i))
		} else {
			pos[i] = int32(len(coreIdx))
			coreIdx = append(coreIdx, int32(i))
		}
	}
	chunks := [][]int32{coreIdx}
	if chunk > 0 && len(coreIdx) > chunk {
		chunks = nil
		for lo := 0; lo < len(coreIdx); lo += chunk {
			chunks = append(chunks, coreIdx[lo:min(lo+chunk, len(coreIdx))])
		}
	}
	cs := make([]*SliceTable, len(chunks))
	for k := range cs {
		cs[k] = &SliceTable{Str: t.Str, Stacks: t.Stacks}
	}
	d := &SliceTable{Str: t.Str, Detail: true, Stacks: t.Stacks}
	dropped := 0 // bytes of t's columns dropped since the last collection
	for _, col := range []func(*SliceTable) *Num[int32]{
		func(x *SliceTable) *Num[int32] { return &x.Step }, func(x *SliceTable) *Num[int32] { return &x.Device },
		func(x *SliceTable) *Num[int32] { return &x.Kind.Num }, func(x *SliceTable) *Num[int32] { return &x.Cat.Num },
		func(x *SliceTable) *Num[int32] { return &x.Name.Num }, func(x *SliceTable) *Num[int32] { return &x.StackID },
	} {
		dropped = splitNum(t, cs, d, col, chunks, detailIdx, take, dropped)
	}
	for _, col := range []func(*SliceTable) *Num[int64]{
		func(x *SliceTable) *Num[int64] { return &x.TS }, func(x *SliceTable) *Num[int64] { return &x.Dur },
		func(x *SliceTable) *Num[int64] { return &x.PID }, func(x *SliceTable) *Num[int64] { return &x.TID },
		func(x *SliceTable) *Num[int64] { return &x.Stream }, func(x *SliceTable) *Num[int64] { return &x.Correlation },
		func(x *SliceTable) *Num[int64] { return &x.ExternalID }, func(x *SliceTable) *Num[int64] { return &x.LaunchTS },
		func(x *SliceTable) *Num[int64] { return &x.SelfDur }, func(x *SliceTable) *Num[int64] { return &x.GPUBusyDur },
	} {
		dropped = splitNum(t, cs, d, col, chunks, detailIdx, take, dropped)
	}
	for _, p := range []struct{ dst, src *Sparse[int32] }{
		{&d.GridX, &t.GridX}, {&d.GridY, &t.GridY}, {&d.GridZ, &t.GridZ},
		{&d.BlockX, &t.BlockX}, {&d.BlockY, &t.BlockY}, {&d.BlockZ, &t.BlockZ},
		{&d.Registers, &t.Registers}, {&d.CollGroupSize, &t.CollGroupSize}, {&d.OpKernels, &t.OpKernels},
	} {
		*p.dst = remapSparse(p.src, pos)
	}
	for _, p := range []struct{ dst, src *Sparse[int64] }{
		{&d.SharedMem, &t.SharedMem}, {&d.Bytes, &t.Bytes}, {&d.CollInElems, &t.CollInElems},
		{&d.CollOutElems, &t.CollOutElems}, {&d.Flops, &t.Flops}, {&d.OpBytes, &t.OpBytes}, {&d.OpGPUDur, &t.OpGPUDur},
	} {
		*p.dst = remapSparse(p.src, pos)
	}
	d.Occupancy = remapSparse(&t.Occupancy, pos)
	for _, p := range []struct{ dst, src *SparseDict }{
		{&d.CopyKind, &t.CopyKind}, {&d.HostMem, &t.HostMem}, {&d.CollName, &t.CollName}, {&d.CollDtype, &t.CollDtype},
		{&d.PGName, &t.PGName}, {&d.PGDesc, &t.PGDesc}, {&d.PGRanks, &t.PGRanks}, {&d.CollAlgo, &t.CollAlgo}, {&d.CollProto, &t.CollProto},
		{&d.FlopsDtype, &t.FlopsDtype}, {&d.OpClass, &t.OpClass}, {&d.OpShape, &t.OpShape}, {&d.OpKernel, &t.OpKernel},
	} {
		p.dst.Sparse = remapSparse(&p.src.Sparse, pos)
	}
	if take {
		stacks := t.Stacks
		*t = SliceTable{Str: t.Str, Detail: t.Detail, Stacks: stacks, taken: n}
	}
	for _, c := range cs {
		core = append(core, c.Record(runID, host, rank))
	}
	return core, d.Record(runID, host, rank)
}

// splitNum copies column col of t's rows chunks[k] into cs[k] and of its
// rows detailIdx into d, and with take drops t's column. dropped is how
// many bytes of columns were dropped since the last collection; it returns
// the count with this column's.
func splitNum[T int32 | int64](t *SliceTable, cs []*SliceTable, d *SliceTable, col func(*SliceTable) *Num[T], chunks [][]int32, detailIdx []int32, take bool, dropped int) int {
	src := col(t)
	for k, idx := range chunks {
		*col(cs[k]) = gatherNum(src, idx)
	}
	*col(d) = gatherNum(src, detailIdx)
	if take {
		var zero T
		dropped += cap(src.V) * int(unsafe.Sizeof(zero))
		*src = Num[T]{}
		if dropped >= dropGCBytes {
			// a big trace's columns, copied: collect them now, so the
			// records that follow reuse their memory instead of adding
			// to it (the heap would grow by half before the GC ran)
			dropped = 0
			runtime.GC()
		}
	}
	return dropped
}

// dropGCBytes is how many bytes of columns TakeRecords drops before it
// runs the garbage collector.
const dropGCBytes = 96 << 20

func gatherNum[T int32 | int64 | float64 | uint8](c *Num[T], idx []int32) Num[T] {
	if len(c.V) == 0 {
		return Num[T]{}
	}
	out := Num[T]{V: make([]T, len(idx))}
	for i, r := range idx {
		out.V[i] = c.V[r]
	}
	if c.nulls > 0 && c.bits != nil {
		for i, r := range idx {
			if !bitutil.BitIsSet(c.bits, int(r)) {
				out.mark(i, false)
			} else if out.bits != nil {
				out.mark(i, true)
			}
		}
	}
	return out
}

func remapSparse[T int32 | int64 | float64 | uint8](s *Sparse[T], pos []int32) Sparse[T] {
	out := Sparse[T]{Rows: make([]int32, len(s.Rows)), Vals: s.Vals}
	for i, r := range s.Rows {
		out.Rows[i] = pos[r]
	}
	return out
}

// At is the step whose range holds ts, for a table sorted by start (ranges
// may nest or touch; the latest-starting one that holds ts wins).
func (t *StepTable) At(ts int64) (int32, bool) {
	starts, ends, nums := t.Start.V, t.End.V, t.Step.V
	i := sort.Search(len(starts), func(k int) bool { return starts[k] > ts }) - 1
	for ; i >= 0; i-- {
		if ts < ends[i] {
			return nums[i], true
		}
		if i > 0 && ends[i-1] <= starts[i] {
			break
		}
	}
	return 0, false
}
