package stream

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Tables of the CUDA caching allocator's state, from a memory snapshot
// (torch.cuda.memory._snapshot). Sizes are bytes; addresses are the
// allocator's device addresses; frame is the allocation site (the first
// frame outside torch internals, "file:line function").

// MemSegmentsSchema: one row per cudaMalloc'd segment.
var MemSegmentsSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", DictString, false),
	field("rank", i32, false),
	field("host", DictString, false),
	field("device", i32, false),
	field("address", i64, false),
	field("total_size", i64, false),
	field("allocated_size", i64, false),
	field("active_size", i64, false),
	field("requested_size", i64, false),
	field("stream", i64, false),
	field("segment_type", DictString, false),
	field("pool", DictString, false),
	field("is_expandable", arrow.FixedWidthTypes.Boolean, false),
	field("blocks", i32, false),
	field("frame", DictString, true),
}, nil)

// MemBlocksSchema: one row per block of a segment.
var MemBlocksSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", DictString, false),
	field("rank", i32, false),
	field("device", i32, false),
	field("segment_address", i64, false),
	field("address", i64, false),
	field("size", i64, false),
	field("requested_size", i64, false),
	field("state", DictString, false),
	field("frame", DictString, true),
}, nil)

// MemEventsSchema: one row per allocator trace entry, in trace order.
var MemEventsSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", DictString, false),
	field("rank", i32, false),
	field("device", i32, false),
	field("seq", i64, false),
	field("action", DictString, false),
	field("addr", i64, true),
	field("size", i64, true),
	field("stream", i64, true),
	field("ts", i64, true),
	field("device_free", i64, true),
	field("frame", DictString, true),
}, nil)

// MemSegmentTable accumulates mem_segments rows.
type MemSegmentTable struct {
	Str                                                  *Strings
	Device, Blocks                                       Num[int32]
	Address, Total, Allocated, Active, Requested, Stream Num[int64]
	SegmentType, Pool                                    Dict
	Expandable                                           []bool
	Frame                                                Dict
}

// MemBlockTable accumulates mem_blocks rows.
type MemBlockTable struct {
	Str                                      *Strings
	Device                                   Num[int32]
	SegmentAddress, Address, Size, Requested Num[int64]
	State, Frame                             Dict
}

// MemEventTable accumulates mem_events rows.
type MemEventTable struct {
	Str                                     *Strings
	Device                                  Num[int32]
	Seq, Addr, Size, Stream, TS, DeviceFree Num[int64]
	Action, Frame                           Dict
}

// Len is the number of rows.
func (t *MemSegmentTable) Len() int { return len(t.Address.V) }

// Len is the number of rows.
func (t *MemBlockTable) Len() int { return len(t.Address.V) }

// Len is the number of rows.
func (t *MemEventTable) Len() int { return len(t.Seq.V) }

// Record wraps the columns as one record batch.
func (t *MemSegmentTable) Record(runID, host string, rank int32) arrow.RecordBatch {
	n := t.Len()
	runIdx, hostIdx := t.Str.ID(runID), t.Str.ID(host)
	dict := t.Str.data()
	defer dict.Release()
	bb := array.NewBooleanBuilder(memory.DefaultAllocator)
	defer bb.Release()
	bb.AppendValues(t.Expandable, nil)
	cols := []arrow.Array{
		constDictID(runIdx, n, dict), constI32(rank, n), constDictID(hostIdx, n, dict),
		t.Device.array(i32), t.Address.array(i64), t.Total.array(i64), t.Allocated.array(i64),
		t.Active.array(i64), t.Requested.array(i64), t.Stream.array(i64),
		t.SegmentType.dictArray(dict), t.Pool.dictArray(dict), bb.NewArray(), t.Blocks.array(i32),
		t.Frame.dictArray(dict),
	}
	return NewRecord(MemSegmentsSchema, cols, n)
}

// Record wraps the columns as one record batch.
func (t *MemBlockTable) Record(runID string, rank int32) arrow.RecordBatch {
	n := t.Len()
	runIdx := t.Str.ID(runID)
	dict := t.Str.data()
	defer dict.Release()
	cols := []arrow.Array{
		constDictID(runIdx, n, dict), constI32(rank, n), t.Device.array(i32),
		t.SegmentAddress.array(i64), t.Address.array(i64), t.Size.array(i64), t.Requested.array(i64),
		t.State.dictArray(dict), t.Frame.dictArray(dict),
	}
	return NewRecord(MemBlocksSchema, cols, n)
}

// Record wraps the columns as one record batch.
func (t *MemEventTable) Record(runID string, rank int32) arrow.RecordBatch {
	n := t.Len()
	runIdx := t.Str.ID(runID)
	dict := t.Str.data()
	defer dict.Release()
	cols := []arrow.Array{
		constDictID(runIdx, n, dict), constI32(rank, n), t.Device.array(i32), t.Seq.array(i64),
		t.Action.dictArray(dict), t.Addr.array(i64), t.Size.array(i64), t.Stream.array(i64),
		t.TS.array(i64), t.DeviceFree.array(i64), t.Frame.dictArray(dict),
	}
	return NewRecord(MemEventsSchema, cols, n)
}
