package stream

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Small per-rank tables: a handful of rows per trace. They travel as Arrow
// batches like the event tables, so that one path (encode, publish, decode,
// insert) carries everything a trace holds. The ranks row of a trace is
// sent last: its arrival means every other batch of that trace was sent.

var (
	str     = arrow.BinaryTypes.String
	boolean = arrow.FixedWidthTypes.Boolean
)

// RanksSchema is the schema of the ranks table: where a rank's data came
// from and what its trace said about itself.
var RanksSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", str, false),
	field("rank", i32, false),
	field("host", str, false),
	field("source", str, false),
	field("rank_source", str, true),
	field("world_size", i32, true),
	field("backend", str, true),
	field("gpu_name", str, true),
	field("gpu_mem_bytes", i64, true),
	field("num_sms", i32, true),
	field("base_time_ns", i64, true),
	field("start_ns", i64, true),
	field("end_ns", i64, true),
	field("complete", boolean, true),
	field("events", i64, true),
	field("json_bytes", i64, true),
	field("device", i32, true),
}, nil)

// RankFromSnapshot is the rank_source of a rank known only from a memory
// snapshot; a trace of the same rank replaces its row.
const RankFromSnapshot = "snapshot"

// RankRow is one row of the ranks table. Zero values of the optional
// fields (world size, backend, GPU, memory, SMs) are stored as null.
type RankRow struct {
	RunID, Host, Source, RankSource string
	Rank                            int32
	WorldSize                       int32
	Backend, GPUName                string
	GPUMemBytes                     int64
	NumSMs                          int32
	BaseTimeNS, StartNS, EndNS      int64
	Complete                        bool
	Events, JSONBytes               int64
	// Device is the CUDA device its GPU work ran on, where HasDevice.
	Device    int32
	HasDevice bool
}

// RanksRecord builds a ranks batch.
func RanksRecord(rows []RankRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, RanksSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.RunID)
		b.Field(1).(*array.Int32Builder).Append(r.Rank)
		b.Field(2).(*array.StringBuilder).Append(r.Host)
		b.Field(3).(*array.StringBuilder).Append(r.Source)
		optString(b.Field(4), r.RankSource)
		optI32(b.Field(5), r.WorldSize)
		optString(b.Field(6), r.Backend)
		optString(b.Field(7), r.GPUName)
		optI64(b.Field(8), r.GPUMemBytes)
		optI32(b.Field(9), r.NumSMs)
		if r.RankSource == RankFromSnapshot {
			// a memory snapshot has no timeline
			for i := 10; i <= 13; i++ {
				b.Field(i).AppendNull()
			}
		} else {
			b.Field(10).(*array.Int64Builder).Append(r.BaseTimeNS)
			b.Field(11).(*array.Int64Builder).Append(r.StartNS)
			b.Field(12).(*array.Int64Builder).Append(r.EndNS)
			b.Field(13).(*array.BooleanBuilder).Append(r.Complete)
		}
		b.Field(14).(*array.Int64Builder).Append(r.Events)
		b.Field(15).(*array.Int64Builder).Append(r.JSONBytes)
		if r.HasDevice {
			b.Field(16).(*array.Int32Builder).Append(r.Device)
		} else {
			b.Field(16).AppendNull()
		}
	}
	return b.NewRecordBatch()
}

// ThreadsSchema names host threads: run, rank, tid, name.
var ThreadsSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", str, false),
	field("rank", i32, false),
	field("tid", i64, false),
	field("name", str, false),
}, nil)

// ThreadsRecord builds a threads batch for one rank; tids are in the
// order given.
func ThreadsRecord(runID string, rank int32, tids []int64, names map[int64]string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, ThreadsSchema)
	defer b.Release()
	for _, tid := range tids {
		b.Field(0).(*array.StringBuilder).Append(runID)
		b.Field(1).(*array.Int32Builder).Append(rank)
		b.Field(2).(*array.Int64Builder).Append(tid)
		b.Field(3).(*array.StringBuilder).Append(names[tid])
	}
	return b.NewRecordBatch()
}

// StacksSchema: the host call tree of a rank's trace, one row per distinct
// call stack (see StackNode). A slice's stack_id is a row here; the path
// of a stack is its chain of parent_id up to a root (parent_id null).
var StacksSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", str, false),
	field("rank", i32, false),
	field("stack_id", i32, false),
	field("parent_id", i32, true),
	field("depth", i32, false),
	field("kind", str, false),
	field("name", str, false),
}, nil)

// StacksRecord builds a stacks batch for one rank from a table's stack
// nodes; their kind and name ids are strings of str.
func StacksRecord(runID string, rank int32, nodes []StackNode, str *Strings) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, StacksSchema)
	defer b.Release()
	b.Reserve(len(nodes))
	for i, n := range nodes {
		b.Field(0).(*array.StringBuilder).Append(runID)
		b.Field(1).(*array.Int32Builder).Append(rank)
		b.Field(2).(*array.Int32Builder).Append(int32(i))
		if n.Parent < 0 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Int32Builder).Append(n.Parent)
		}
		b.Field(4).(*array.Int32Builder).Append(n.Depth)
		b.Field(5).(*array.StringBuilder).Append(str.Get(n.Kind))
		b.Field(6).(*array.StringBuilder).Append(str.Get(n.Name))
	}
	return b.NewRecordBatch()
}

// ProcessGroupsSchema: process groups from distributedInfo.pg_config.
var ProcessGroupsSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", str, false),
	field("rank", i32, false),
	field("pg_name", str, false),
	field("pg_desc", str, true),
	field("backend_config", str, true),
	field("pg_size", i32, true),
	field("ranks", arrow.ListOf(i32), true),
}, nil)

// ProcessGroupRow is one process group as a rank reported it.
type ProcessGroupRow struct {
	Name, Desc, BackendConfig string
	Size                      int32
	Ranks                     []int32
}

// ProcessGroupsRecord builds a process_groups batch for one rank.
func ProcessGroupsRecord(runID string, rank int32, rows []ProcessGroupRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, ProcessGroupsSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(runID)
		b.Field(1).(*array.Int32Builder).Append(rank)
		b.Field(2).(*array.StringBuilder).Append(r.Name)
		b.Field(3).(*array.StringBuilder).Append(r.Desc)
		b.Field(4).(*array.StringBuilder).Append(r.BackendConfig)
		b.Field(5).(*array.Int32Builder).Append(r.Size)
		lb := b.Field(6).(*array.ListBuilder)
		lb.Append(true)
		vb := lb.ValueBuilder().(*array.Int32Builder)
		vb.AppendValues(r.Ranks, nil)
	}
	return b.NewRecordBatch()
}

// MemSettingsSchema: the caching allocator's settings from a snapshot, one
// row per key, the value as JSON text.
var MemSettingsSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", str, false),
	field("rank", i32, false),
	field("key", str, false),
	field("value", str, true),
}, nil)

// MemSettingsRecord builds a mem_settings batch; keys are in the order given.
func MemSettingsRecord(runID string, rank int32, keys []string, values map[string]string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, MemSettingsSchema)
	defer b.Release()
	for _, k := range keys {
		b.Field(0).(*array.StringBuilder).Append(runID)
		b.Field(1).(*array.Int32Builder).Append(rank)
		b.Field(2).(*array.StringBuilder).Append(k)
		b.Field(3).(*array.StringBuilder).Append(values[k])
	}
	return b.NewRecordBatch()
}

func optString(b array.Builder, s string) {
	if s == "" {
		b.AppendNull()
		return
	}
	b.(*array.StringBuilder).Append(s)
}

func optI32(b array.Builder, v int32) {
	if v == 0 {
		b.AppendNull()
		return
	}
	b.(*array.Int32Builder).Append(v)
}

func optI64(b array.Builder, v int64) {
	if v == 0 {
		b.AppendNull()
		return
	}
	b.(*array.Int64Builder).Append(v)
}
