package kineto

// A trace too big to hold is read twice. The first pass keeps, of every
// row, only what finish reads (kind, name, times, thread, correlation)
// and runs finish on that: steps, launches, self times, call stacks, GPU
// busy time, operator costs and collectives come out as for any trace.
// It then drops the columns it read and keeps what finish computed. The
// second pass reads the file again, builds every column of the rows, and
// hands them over in chunks of chunkRows, each given its share of what the
// first pass computed: a row's place in the file is its number in both.
// The counters (memory events, counter tracks) are left by the first pass
// and come with the second's chunks. A trace's rows take ~130 bytes each
// held whole; the first pass holds ~60 while finish runs (36 of them its
// narrow columns) and ~26 after it.

import (
	"errors"
	"fmt"
	"os"

	"github.com/trainscope/trainscope/ingest/jsonscan"
	"github.com/trainscope/trainscope/stream"
)

// chunkRows is how many rows each chunk of a two-pass read holds, unless
// Options.ChunkRows says (a variable for tests).
var chunkRows = 1 << 18

// secondPass is what the first pass of a two-pass read leaves for the
// second: the columns finish computed, and where the rows are.
type secondPass struct {
	path string
	opt  Options
	b    builder // the first pass's (its caches give the same string ids)
	base int64   // added to every ts (baseTimeNanoseconds), or 0
	rows int

	// resolved is the first pass's table less the columns it read: what
	// finish computed for every row (the correlation ids too, where flows
	// filled some: flowsBound)
	resolved     stream.SliceTable
	launchTS     stream.Sparse[int64] // not in resolved: most rows have none
	flowsBound   bool
	modelledRows []int32 // rows opCost gave a cost, in order
	nextModel    int

	device    int32 // the first GPU activity's device (Trace.Device)
	hasDevice bool

	// during the second pass
	chunkRows int
	off       int // the first row of the chunk being built
	emit      func(*stream.SliceTable, *stream.CounterTable) error
}

// ReadFileTwoPass reads a trace file in two passes (see secondPass), so
// that its rows are never all in memory: the Trace it returns has
// everything but the slices, which EachChunk reads. A file that turns out
// to hold no slices (a memory timeline, an execution trace) is returned
// read whole.
func ReadFileTwoPass(path string, opt Options) (*Trace, error) {
	opt.slim = true
	return ReadFile(path, opt)
}

// keepForSecondPass is the end of a slim first pass: it keeps what finish
// computed, drops the columns it read, and leaves the trace's table only
// its length and stacks.
func (b *builder) keepForSecondPass(path string, opt Options) {
	s, t := b.s, b.t
	sp := &secondPass{path: path, opt: opt, rows: s.Len(), resolved: *s, launchTS: b.launchTS, flowsBound: b.flowsBound,
		modelledRows: b.modelledRows, device: b.firstDevice, hasDevice: b.hasDevice}
	if t.HasBaseTime {
		sp.base = t.BaseTimeNS
	}
	r := &sp.resolved
	r.TS, r.Dur = stream.Num[int64]{}, stream.Num[int64]{}
	r.DropThreads()
	r.Kind, r.Name = stream.Dict{}, stream.Dict{}
	if !b.flowsBound {
		r.Correlation = stream.Num[int64]{} // the file's own are right
	}
	s.DropRows()
	b.flows, b.costs, b.open, b.kernelColl, b.opColl, b.modelledRows = nil, nil, nil, nil, nil, nil
	b.launchTS = stream.Sparse[int64]{}
	b.s, b.t = nil, nil
	sp.b = *b
	t.Rest = sp
}

// rescan reads the file at path again with a parser that prep readies
// (its builder a copy of b, whose caches it shares, so that every string
// has the id it had). The file was read once already: an error now means
// it has changed.
func (b *builder) rescan(path string, opt Options, prep func(p *parser)) (*parser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	_, src, done, err := openJSON(f, path, opt)
	if err != nil {
		return nil, err
	}
	defer done()
	opt.slim, opt.SizeHint = false, 0
	p := newParser(src, path, opt)
	p.b = *b
	p.b.t, p.b.s, p.b.slim = p.trace, p.trace.Slices, false
	prep(p)
	if err := p.scan(); err != nil {
		var je *jsonscan.Error
		if errors.As(err, &je) {
			return nil, &FormatError{Path: path, Offset: je.Offset, Msg: "read again, the file has changed: " + je.Msg}
		}
		return nil, err
	}
	return p, nil
}

// readFlows reads the flows a slim first pass left: a trace with rows
// that lack a correlation id (older Kineto) needs them to bind its
// launches. Most traces give every launch and GPU row its id, and their
// flows, a tenth of the events, would be held for nothing.
func (b *builder) readFlows(path string, opt Options) error {
	p, err := b.rescan(path, opt, func(p *parser) { p.b.flowsOnly, p.b.flows = true, nil })
	if err != nil {
		return err
	}
	b.flows = p.b.flows
	for tid, name := range p.trace.ThreadNames { // a string tid only flows had
		if _, ok := b.t.ThreadNames[tid]; !ok {
			b.t.ThreadNames[tid] = name
		}
	}
	return nil
}

// slimDevice notes the device of the first GPU activity, which Device
// reads from a table's Device column: a slim pass has none.
func (b *builder) slimDevice(a *eventArgs, e *event, onGPU bool) {
	if b.hasDevice {
		return
	}
	switch {
	case a.has&aDevice != 0:
		b.firstDevice, b.hasDevice = int32(a.device), true
	case onGPU:
		b.firstDevice, b.hasDevice = int32(e.pid), true
	}
}

// reserve gives the columns the pass appends to room for n rows.
func (b *builder) reserve(n int) {
	s := b.s
	if !b.slim {
		s.Reserve(n)
		return
	}
	s.ReserveNarrow(n)
}

// modelled says whether row had a modelled cost in the first pass.
func (sp *secondPass) modelled(row int) bool {
	for sp.nextModel < len(sp.modelledRows) && int(sp.modelledRows[sp.nextModel]) < row {
		sp.nextModel++
	}
	return sp.nextModel < len(sp.modelledRows) && int(sp.modelledRows[sp.nextModel]) == row
}

// Device is the device of the first GPU activity the first pass met
// (trace.Rest).
func (sp *secondPass) Device() (int32, bool) { return sp.device, sp.hasDevice }

// EachChunk reads a two-pass trace's file again and hands its slices to
// fn in chunks of up to 256K rows, in file order, each complete (as
// TakeRecords would cut them from a table read whole), with the counters
// read since the chunk before (nil if none). fn owns them. The counters
// that follow the last slice are left in t.Counters (trace.Rest; a trace
// read whole is one chunk, and its counters stay in t.Counters).
func (sp *secondPass) EachChunk(t *Trace, fn func(*stream.SliceTable, *stream.CounterTable) error) error {
	sp.chunkRows = chunkRows
	if sp.opt.ChunkRows > 0 {
		sp.chunkRows = sp.opt.ChunkRows
	}
	sp.off, sp.nextModel, sp.emit = 0, 0, fn
	p, err := sp.b.rescan(sp.path, sp.opt, func(p *parser) {
		// the first pass's strings: the columns it computed hold their ids
		p.trace.Str, p.trace.Counters.Str = sp.b.str, sp.b.str
		p.trace.Slices = stream.NewSliceTable(sp.b.str, true)
		p.trace.Slices.Reserve(sp.chunkRows)
		p.b.t, p.b.s, p.b.again = p.trace, p.trace.Slices, sp
	})
	if err != nil {
		return err
	}
	if p.b.s.Len() > 0 {
		if err := sp.flush(&p.b); err != nil {
			return err
		}
	}
	if sp.off != sp.rows {
		return fmt.Errorf("%s changed while it was read: %d slices the first time, %d the second", sp.path, sp.rows, sp.off)
	}
	if c := sp.takeCounters(&p.b); c != nil {
		t.Counters = *c
	}
	return nil
}

// takeCounters takes the counters b has read since the last chunk, on the
// trace's time base; nil if none.
func (sp *secondPass) takeCounters(b *builder) *stream.CounterTable {
	c := b.t.Counters
	if c.Len() == 0 {
		return nil
	}
	b.t.Counters = stream.CounterTable{Str: c.Str}
	if sp.base != 0 {
		for i := range c.TS.V {
			c.TS.V[i] += sp.base
		}
	}
	return &c
}

// flush completes the chunk b has built with what the first pass
// computed for its rows, hands it over and starts the next.
func (sp *secondPass) flush(b *builder) error {
	c, r := b.s, &sp.resolved
	lo, hi := sp.off, sp.off+c.Len()
	if hi > sp.rows {
		return fmt.Errorf("%s changed while it was read: more than the %d slices it had the first time", sp.path, sp.rows)
	}
	if sp.base != 0 {
		for i := range c.TS.V {
			c.TS.V[i] += sp.base
		}
	}
	c.Step, c.StackID = r.Step.Range(lo, hi), r.StackID.Range(lo, hi)
	launchTS := sp.launchTS.Range(lo, hi)
	c.LaunchTS, c.SelfDur, c.GPUBusyDur = launchTS.Dense(hi-lo), r.SelfDur.Range(lo, hi), r.GPUBusyDur.Range(lo, hi)
	if sp.flowsBound {
		c.Correlation = r.Correlation.Range(lo, hi)
	}
	for _, p := range []struct{ dst, src *stream.SparseDict }{
		{&c.CollName, &r.CollName}, {&c.CollDtype, &r.CollDtype}, {&c.FlopsDtype, &r.FlopsDtype},
		{&c.OpClass, &r.OpClass}, {&c.OpShape, &r.OpShape}, {&c.OpKernel, &r.OpKernel},
	} {
		p.dst.Sparse = p.src.Range(lo, hi)
	}
	for _, p := range []struct{ dst, src *stream.Sparse[int64] }{
		{&c.CollInElems, &r.CollInElems}, {&c.CollOutElems, &r.CollOutElems}, {&c.Flops, &r.Flops},
		{&c.OpBytes, &r.OpBytes}, {&c.OpGPUDur, &r.OpGPUDur},
	} {
		*p.dst = p.src.Range(lo, hi)
	}
	c.CollGroupSize, c.OpKernels = r.CollGroupSize.Range(lo, hi), r.OpKernels.Range(lo, hi)
	sp.off = hi
	next := stream.NewSliceTable(c.Str, true)
	next.Reserve(sp.chunkRows)
	b.s, b.t.Slices = next, next
	return sp.emit(c, sp.takeCounters(b))
}
