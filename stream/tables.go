package stream

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// SliceTable accumulates rows of the slices table column by column. Run id,
// rank and host are constant per table and set before Record is called.
// Dictionary columns hold ids from Str.
type SliceTable struct {
	Str *Strings

	Step                                         Num[int32]
	Kind, Cat, Name                              Dict
	TS, Dur, PID, TID                            Num[int64]
	Device                                       Num[int32]
	Stream, Correlation, ExternalID, LaunchTS    Num[int64]
	GridX, GridY, GridZ, BlockX, BlockY, BlockZ  Num[int32]
	Registers                                    Num[int32]
	SharedMem                                    Num[int64]
	Occupancy                                    Num[float64]
	Bytes                                        Num[int64]
	CopyKind, HostMem                            Dict
	CollName                                     Dict
	CollInElems, CollOutElems                    Num[int64]
	CollDtype                                    Dict
	CollGroupSize                                Num[int32]
	PGName, PGDesc, PGRanks, CollAlgo, CollProto Dict
}

// NewSliceTable returns an empty table over the given string table.
func NewSliceTable(str *Strings) *SliceTable { return &SliceTable{Str: str} }

// Len is the number of rows.
func (t *SliceTable) Len() int { return len(t.TS.V) }

// Record wraps the columns as one record batch without copying them.
func (t *SliceTable) Record(runID, host string, rank int32) arrow.RecordBatch {
	n := t.Len()
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
		t.GridX.array(i32), t.GridY.array(i32), t.GridZ.array(i32),
		t.BlockX.array(i32), t.BlockY.array(i32), t.BlockZ.array(i32),
		t.Registers.array(i32), t.SharedMem.array(i64), t.Occupancy.array(f64),
		t.Bytes.array(i64), t.CopyKind.dictArray(dict), t.HostMem.dictArray(dict),
		t.CollName.dictArray(dict), t.CollInElems.array(i64), t.CollOutElems.array(i64),
		t.CollDtype.dictArray(dict), t.CollGroupSize.array(i32),
		t.PGName.dictArray(dict), t.PGDesc.dictArray(dict), t.PGRanks.dictArray(dict),
		t.CollAlgo.dictArray(dict), t.CollProto.dictArray(dict),
	}
	return newRecord(SlicesSchema, cols, n)
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
	return newRecord(StepsSchema, cols, n)
}

// CounterTable accumulates rows of the counters table.
type CounterTable struct {
	Str    *Strings
	Device Num[int32]
	TS     Num[int64]
	Metric Dict
	Value  Num[float64]
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
	cols := []arrow.Array{
		constDictID(runIdx, n, dict),
		ranks.array(i32),
		constDictID(hostIdx, n, dict),
		t.Device.array(i32), t.TS.array(i64), t.Metric.dictArray(dict), t.Value.array(f64),
	}
	return newRecord(CountersSchema, cols, n)
}

func newRecord(schema *arrow.Schema, cols []arrow.Array, n int) arrow.RecordBatch {
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
