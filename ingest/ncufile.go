package ingest

import (
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/trainscope/trainscope/ingest/ncu"
	"github.com/trainscope/trainscope/ingest/trace"
	"github.com/trainscope/trainscope/stream"
)

// IsNCU says whether a path names an Nsight Compute CSV export (ncu --csv
// --page details or --page raw): a .csv whose header has ID and Kernel Name.
func IsNCU(path string) bool { return ncu.IsExport(path) }

// readNCU reads an ncu export; one that cannot be read is an InputError
// naming the file and what is missing.
func readNCU(path string) (*ncu.Export, error) {
	e, err := ncu.ReadFile(path)
	if err != nil {
		return nil, &InputError{err}
	}
	return e, nil
}

// ncuBatches turns an export into one kernel_metrics batch. Its rank comes
// from the file name (rank-3...), else it is null: ncu profiles one
// process, and its kernels are matched with the run's by name.
func ncuBatches(e *ncu.Export, runID, host string) []Batch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, stream.KernelMetricsSchema)
	defer b.Release()
	rank, hasRank := int32(-1), false
	if r, ok := trace.RankFromName(e.Path); ok {
		rank, hasRank = int32(r), true
	}
	source := filepath.Base(e.Path)
	str := func(i int) *array.StringBuilder { return b.Field(i).(*array.StringBuilder) }
	i32 := func(i int) *array.Int32Builder { return b.Field(i).(*array.Int32Builder) }
	optStr := func(i int, s string) {
		if s == "" {
			str(i).AppendNull()
		} else {
			str(i).Append(s)
		}
	}
	optI32 := func(i int, v int32, ok bool) {
		if ok {
			i32(i).Append(v)
		} else {
			i32(i).AppendNull()
		}
	}
	for _, m := range e.Metrics {
		str(0).Append(runID)
		optI32(1, rank, hasRank)
		optStr(2, host)
		str(3).Append(source)
		b.Field(4).(*array.Int64Builder).Append(m.Launch)
		str(5).Append(m.Kernel)
		optI32(6, m.Device, m.Device >= 0)
		optStr(7, m.CC)
		for k := range 3 {
			optI32(8+k, m.Grid[k], m.Grid[k] > 0)
		}
		for k := range 3 {
			optI32(11+k, m.Block[k], m.Block[k] > 0)
		}
		if m.Stream >= 0 {
			b.Field(14).(*array.Int64Builder).Append(m.Stream)
		} else {
			b.Field(14).AppendNull()
		}
		optStr(15, m.Section)
		str(16).Append(m.Name)
		optStr(17, m.Unit)
		if m.Value != nil {
			b.Field(18).(*array.Float64Builder).Append(*m.Value)
		} else {
			b.Field(18).AppendNull()
		}
		optStr(19, m.Text)
	}
	var rec arrow.RecordBatch = b.NewRecordBatch()
	return []Batch{{"kernel_metrics", rec}}
}
