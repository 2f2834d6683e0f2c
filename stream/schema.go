package stream

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// SchemaVersion is bumped whenever a table's columns change. It travels
// with every batch so that an ingestor can refuse batches it cannot read.
const SchemaVersion = 3

// Slice kinds: the kind column of the slices table.
const (
	KindKernel        = "kernel"         // GPU compute kernel
	KindComm          = "comm"           // GPU collective / p2p kernel (NCCL, RCCL)
	KindMemcpy        = "memcpy"         // GPU memory copy
	KindMemset        = "memset"         // GPU memset
	KindRuntime       = "runtime"        // CUDA / HIP runtime API call
	KindDriver        = "driver"         // CUDA driver API call
	KindCPUOp         = "cpu_op"         // ATen / framework operator
	KindPython        = "python"         // Python function (with_stack)
	KindAnnotation    = "annotation"     // record_function range on the host
	KindGPUAnnotation = "gpu_annotation" // record_function range projected on a stream
	KindSync          = "sync"           // cudaStreamSynchronize / event sync seen on the GPU
	KindOther         = "other"          // profiler overhead, spans, unknown categories
)

// GPUKinds are the kinds that run on a GPU stream.
var GPUKinds = []string{KindKernel, KindComm, KindMemcpy, KindMemset}

func field(name string, t arrow.DataType, nullable bool) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: nullable}
}

var (
	i32 = arrow.PrimitiveTypes.Int32
	i64 = arrow.PrimitiveTypes.Int64
	f64 = arrow.PrimitiveTypes.Float64
)

// SlicesSchema is the schema of the slices table: every duration event.
var SlicesSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", DictString, false),
	field("rank", i32, false),
	field("host", DictString, false),
	field("step", i32, true),
	field("kind", DictString, false),
	field("cat", DictString, false),
	field("name", DictString, false),
	field("ts", i64, false),
	field("dur", i64, false),
	field("pid", i64, false),
	field("tid", i64, false),
	field("device", i32, true),
	field("stream", i64, true),
	field("correlation", i64, true),
	field("external_id", i64, true),
	field("launch_ts", i64, true),
	field("self_dur", i64, true),
	field("stack_id", i32, true), // a host slice's call stack: stacks.stack_id
	// the part of a host slice during which its trace's GPU was busy
	field("gpu_busy_dur", i64, true),
	// kernels
	field("grid_x", i32, true),
	field("grid_y", i32, true),
	field("grid_z", i32, true),
	field("block_x", i32, true),
	field("block_y", i32, true),
	field("block_z", i32, true),
	field("registers", i32, true),
	field("shared_mem", i64, true),
	field("occupancy", f64, true),
	// memcpy / memset
	field("bytes", i64, true),
	field("copy_kind", DictString, true),
	field("host_mem", DictString, true),
	// collectives
	field("coll_name", DictString, true),
	field("coll_in_elems", i64, true),
	field("coll_out_elems", i64, true),
	field("coll_dtype", DictString, true),
	field("coll_group_size", i32, true),
	field("pg_name", DictString, true),
	field("pg_desc", DictString, true),
	field("pg_ranks", DictString, true),
	field("coll_algo", DictString, true),
	field("coll_proto", DictString, true),
	// host operators whose FLOPs follow from their input shapes (matmuls,
	// attention): the operator's floating-point operations and their dtype
	field("flops", i64, true),
	field("flops_dtype", DictString, true),
	// the performance model of a host operator (gpu.OpCost): its class
	// (gemm, attention, elementwise ...), its input shapes, the bytes it
	// must move, and the GPU time, number and longest of the kernels
	// launched inside it
	field("op_class", DictString, true),
	field("op_shape", DictString, true),
	field("op_bytes", i64, true),
	field("op_gpu_dur", i64, true),
	field("op_kernels", i32, true),
	field("op_kernel", DictString, true), // the longest kernel it launched
}, nil)

// CoreColumns is how many leading SlicesSchema columns every slice has;
// the rest (kernel, memcpy and collective details) exist only on rows that
// carry them. Rows without details are stored in the narrower
// slices_core table (CoreSchema), the others in slices_detail
// (SlicesSchema); the slices view unites them. Most events of a trace are
// host events without details, and a table stores every column of every
// row, so the split halves the database's memory.
const CoreColumns = 19

// CoreSchema is the schema of slices_core: the first CoreColumns fields.
var CoreSchema = arrow.NewSchema(SlicesSchema.Fields()[:CoreColumns], nil)

// StepsSchema is the schema of the steps table: one row per (rank, step).
var StepsSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", DictString, false),
	field("rank", i32, false),
	field("step", i32, false),
	field("start_ns", i64, false),
	field("end_ns", i64, false),
}, nil)

// CountersSchema is the schema of the counters table: sampled values.
var CountersSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", DictString, false),
	field("rank", i32, true),
	field("host", DictString, false),
	field("device", i32, true),
	field("ts", i64, false),
	field("metric", DictString, false),
	field("value", f64, false),
	// labels are the sample's other labels as a JSON object (a
	// dcgm-exporter series' UUID, modelName, pci_bus_id, pod ...); null
	// where the source has none
	field("labels", DictString, true),
}, nil)

// Tables maps every table a batch may carry to its schema. An ingestor
// refuses a batch whose table is not here or whose columns differ.
var Tables = map[string]*arrow.Schema{
	"slices_core":    CoreSchema,
	"slices_detail":  SlicesSchema,
	"steps":          StepsSchema,
	"counters":       CountersSchema,
	"ranks":          RanksSchema,
	"threads":        ThreadsSchema,
	"stacks":         StacksSchema,
	"process_groups": ProcessGroupsSchema,
	"mem_segments":   MemSegmentsSchema,
	"mem_blocks":     MemBlocksSchema,
	"mem_events":     MemEventsSchema,
	"mem_settings":   MemSettingsSchema,
	"script_flags":   ScriptFlagsSchema,
	"script_context": ScriptContextSchema,
	"kernel_metrics": KernelMetricsSchema,
	"step_account":   AccountSchema,
}

// CheckSchema says whether s is what table's batches look like: the same
// column names and types in the same order (metadata aside).
func CheckSchema(table string, s *arrow.Schema) error {
	want, ok := Tables[table]
	if !ok {
		return fmt.Errorf("unknown table %q", table)
	}
	if s.NumFields() != want.NumFields() {
		return fmt.Errorf("table %s: %d columns, want %d", table, s.NumFields(), want.NumFields())
	}
	for i, f := range s.Fields() {
		w := want.Field(i)
		if f.Name != w.Name || !arrow.TypeEqual(f.Type, w.Type) {
			return fmt.Errorf("table %s: column %d is %s %s, want %s %s", table, i, f.Name, f.Type, w.Name, w.Type)
		}
	}
	return nil
}
