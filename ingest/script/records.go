package script

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/trainscope/trainscope/stream"
)

// Records builds the script_flags batch (one row per flag occurrence) and
// the script_context batch (one row) for a run. The caller owns both and
// releases them.
func (s *Script) Records(runID string) (flags, context arrow.RecordBatch) {
	return s.flagsRecord(runID), s.contextRecord(runID)
}

func (s *Script) flagsRecord(runID string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, stream.ScriptFlagsSchema)
	defer b.Release()
	for _, f := range s.Flags {
		b.Field(0).(*array.StringBuilder).Append(runID)
		b.Field(1).(*array.StringBuilder).Append(s.Path)
		b.Field(2).(*array.StringBuilder).Append(f.File)
		b.Field(3).(*array.Int32Builder).Append(int32(f.Line))
		optStr(b.Field(4), f.Array)
		optStr(b.Field(5), f.Command)
		optStr(b.Field(6), f.Branch)
		if f.Taken == TakenUnknown {
			b.Field(7).AppendNull()
		} else {
			b.Field(7).(*array.BooleanBuilder).Append(f.Taken == TakenYes)
		}
		b.Field(8).(*array.StringBuilder).Append(f.Flag)
		if f.Switch {
			b.Field(9).AppendNull()
		} else {
			b.Field(9).(*array.StringBuilder).Append(f.Value)
		}
		b.Field(10).(*array.StringBuilder).Append(f.Raw)
		optStr(b.Field(11), f.Comment)
		b.Field(12).(*array.Int32Builder).Append(int32(f.Seq))
	}
	return b.NewRecordBatch()
}

func (s *Script) contextRecord(runID string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, stream.ScriptContextSchema)
	defer b.Release()
	c := &s.Context
	b.Field(0).(*array.StringBuilder).Append(runID)
	b.Field(1).(*array.StringBuilder).Append(s.Path)
	b.Field(2).(*array.StringBuilder).Append(c.Framework)
	i := 3
	next := func() array.Builder { i++; return b.Field(i - 1) }
	for _, v := range []*string{c.Model, c.ModelSize, c.DenseOrMoE, c.Modality} {
		optStrPtr(next(), v)
	}
	for _, v := range []*int64{c.GPUs, c.Nodes, c.GPUsPerNode} {
		optI64(next(), v)
	}
	optStrPtr(next(), c.Mode)
	for _, v := range []*int64{c.TP, c.PP, c.VPP, c.CP, c.EP, c.ETP, c.DP, c.MicroBatch, c.GlobalBatch,
		c.SeqLen, c.MaxPromptLen, c.MaxResponseLen, c.Layers, c.Hidden, c.FFNHidden, c.Heads, c.KVHeads,
		c.Experts, c.MoETopK, c.Vocab} {
		optI64(next(), v)
	}
	for _, v := range []*float64{c.ParamsB, c.ActiveParamsB} {
		if fb := next(); v == nil {
			fb.AppendNull()
		} else {
			fb.(*array.Float64Builder).Append(*v)
		}
	}
	for _, v := range []*string{c.Recompute, c.Offload, c.Precision, c.GPU} {
		optStrPtr(next(), v)
	}
	for _, list := range [][]string{c.Problems, c.Derived} {
		lb := next().(*array.ListBuilder)
		lb.Append(true)
		vb := lb.ValueBuilder().(*array.StringBuilder)
		vb.AppendValues(list, nil)
	}
	optI64(next(), c.RolloutTP)
	optI64(next(), c.MaxTokensPerGPU)
	if i != len(stream.ScriptContextSchema.Fields()) {
		panic("script: context columns out of step with stream.ScriptContextSchema")
	}
	return b.NewRecordBatch()
}

func optStr(b array.Builder, s string) {
	if s == "" {
		b.AppendNull()
		return
	}
	b.(*array.StringBuilder).Append(s)
}

func optStrPtr(b array.Builder, s *string) {
	if s == nil {
		b.AppendNull()
		return
	}
	b.(*array.StringBuilder).Append(*s)
}

func optI64(b array.Builder, v *int64) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.(*array.Int64Builder).Append(*v)
}
