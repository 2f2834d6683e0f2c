package stream

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The step-time account: where each step's wall time went on one rank,
// computed once per trace from its timeline (ingest/timeline). A step's
// window on the GPU runs from the end of the previous step's GPU work to
// the end of its own, so the windows of a rank tile its timeline; every
// instant of a window is in exactly one row's ns:
//
//	compute  kernels   the GPU runs compute kernels (communication or copies
//	                   beside them are hidden)
//	comm     exposed   only communication kernels run (waiting for peers
//	                   and transfer together; collective_instances splits them)
//	copy     <kind>    only copies or memsets run: "HtoD pageable",
//	                   "DtoH pinned", "DtoD", "memset" ...
//	idle     <cause>   nothing runs on the GPU; what the thread that launches
//	                   the next GPU work was doing meanwhile:
//	  sync        blocked in a call that waited for the GPU to drain, and
//	              what it did after until the next launch (the drain is
//	              the sync's cost)
//	  input       in the data loader (DataLoader __next__, collate ...)
//	  host        in host work that launches nothing (named by its
//	              outermost such frame: a Python function or an operator)
//	  launch      in launch calls or the operators and Python frames that
//	              launch GPU work (framework and launch overhead)
//	  unrecorded  in no recorded event: outside the profiler's view
//
// Subject names what the time was spent in (the operator, frame or call,
// the copy kind); StackID is that event's call stack (stacks table), or -1.
// Count is how many intervals the row sums.
const (
	AccountCompute = "compute"
	AccountComm    = "comm"
	AccountCopy    = "copy"
	AccountIdle    = "idle"
)

// AccountRow is one row of a rank's step account.
type AccountRow struct {
	Step            int32
	StartNS, EndNS  int64 // the step's window on the GPU timeline
	Category, Cause string
	Subject         string
	StackID         int32 // -1: none
	NS              int64
	Count           int32
	FirstNS, LongNS int64 // the first interval's start, and the longest interval
	// StepComplete: the step is not cut short by the trace's end (every
	// step but the last is; the last when it ran as long and launched as
	// much as the others)
	StepComplete bool
}

// AccountSchema is the schema of the step_account table.
var AccountSchema = arrow.NewSchema([]arrow.Field{
	field("run_id", str, false),
	field("rank", i32, false),
	field("step", i32, true), // null: a trace without steps, one window
	field("start_ns", i64, false),
	field("end_ns", i64, false),
	field("complete", arrow.FixedWidthTypes.Boolean, false),
	field("category", str, false),
	field("cause", str, false),
	field("subject", str, true),
	field("stack_id", i32, true),
	field("ns", i64, false),
	field("intervals", i32, false),
	field("first_ns", i64, false),
	field("longest_ns", i64, false),
}, nil)

// AccountRecord builds a step_account batch for one rank.
func AccountRecord(runID string, rank int32, rows []AccountRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, AccountSchema)
	defer b.Release()
	b.Reserve(len(rows))
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(runID)
		b.Field(1).(*array.Int32Builder).Append(rank)
		if r.Step < 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Int32Builder).Append(r.Step)
		}
		b.Field(3).(*array.Int64Builder).Append(r.StartNS)
		b.Field(4).(*array.Int64Builder).Append(r.EndNS)
		b.Field(5).(*array.BooleanBuilder).Append(r.StepComplete)
		b.Field(6).(*array.StringBuilder).Append(r.Category)
		b.Field(7).(*array.StringBuilder).Append(r.Cause)
		if r.Subject == "" {
			b.Field(8).AppendNull()
		} else {
			b.Field(8).(*array.StringBuilder).Append(r.Subject)
		}
		if r.StackID < 0 {
			b.Field(9).AppendNull()
		} else {
			b.Field(9).(*array.Int32Builder).Append(r.StackID)
		}
		b.Field(10).(*array.Int64Builder).Append(r.NS)
		b.Field(11).(*array.Int32Builder).Append(r.Count)
		b.Field(12).(*array.Int64Builder).Append(r.FirstNS)
		b.Field(13).(*array.Int64Builder).Append(r.LongNS)
	}
	return b.NewRecordBatch()
}
