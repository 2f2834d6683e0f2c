package ingest

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// StepFilter passes on only the rows of steps Lo..Hi (inclusive): slices and
// steps by their step column, counters by time within those steps. It is
// the agent's trigger mode (PerfTracker's "wait N steps, profile M"), for a
// profiler that records more than the steps wanted. Rows outside any step
// are dropped; tables without steps or times (ranks, threads, memory)
// pass whole.
type StepFilter struct {
	Next   Sink
	Lo, Hi int32

	from, to int64 // time span of the kept steps of the current artifact
}

// BeginArtifact forwards to Next and forgets the last artifact's span.
func (f *StepFilter) BeginArtifact(path string) {
	f.from, f.to = 0, 0
	if b, ok := f.Next.(interface{ BeginArtifact(string) }); ok {
		b.BeginArtifact(path)
	}
}

// Insert filters rec and forwards what is left.
func (f *StepFilter) Insert(ctx context.Context, table string, rec arrow.RecordBatch) error {
	var mask []bool
	switch table {
	case "slices_core", "slices_detail", "steps":
		col := rec.Column(rec.Schema().FieldIndices("step")[0]).(*array.Int32)
		mask = make([]bool, rec.NumRows())
		for i := range mask {
			s := col.Value(i)
			mask[i] = col.IsValid(i) && s >= f.Lo && s <= f.Hi
		}
		if table == "steps" {
			start := rec.Column(rec.Schema().FieldIndices("start_ns")[0]).(*array.Int64)
			end := rec.Column(rec.Schema().FieldIndices("end_ns")[0]).(*array.Int64)
			for i, keep := range mask {
				if keep {
					if f.from == 0 || start.Value(i) < f.from {
						f.from = start.Value(i)
					}
					f.to = max(f.to, end.Value(i))
				}
			}
		}
	case "counters":
		ts := rec.Column(rec.Schema().FieldIndices("ts")[0]).(*array.Int64)
		mask = make([]bool, rec.NumRows())
		for i := range mask {
			mask[i] = ts.Value(i) >= f.from && ts.Value(i) <= f.to && f.to > 0
		}
	default:
		return f.Next.Insert(ctx, table, rec)
	}
	b := array.NewBooleanBuilder(memory.DefaultAllocator)
	b.AppendValues(mask, nil)
	m := b.NewArray()
	b.Release()
	defer m.Release()
	out, err := compute.FilterRecordBatch(ctx, rec, m, compute.DefaultFilterOptions())
	if err != nil {
		return err
	}
	defer out.Release()
	if out.NumRows() == 0 {
		return nil
	}
	return f.Next.Insert(ctx, table, out)
}
