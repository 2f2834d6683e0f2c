package kineto

// A trace too big to hold is read twice. The first pass keeps, of every
// row, only what finish reads (kind, name, times, thread, correlation)
// and runs finish on that: steps, launches, self times, call stacks, GPU
// busy time, operator costs and collectives come out as for any trace.
// It then drops the columns it read and keeps what finish computed. The
// second pass reads the file again, builds every column of the rows, and
// hands them over in chunks of chunkRows, each given its share of what the
// first pass computed: a row's place in the file is its number in both.
// A 1.5 GB trace's rows took ~130 bytes each held whole; the first pass
// holds ~80 while finish runs and ~35 after it.

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

	// finish's columns for every row
	step, stackID                      stream.Num[int32]
	launchTS, selfDur, gpuBusy         stream.Num[int64]
	corr                               *stream.Num[int64] // flows filled some correlation ids (else nil: the file's are right)
	collName, collDtype                stream.SparseDict
	collIn, collOut                    stream.Sparse[int64]
	collGroups                         stream.Sparse[int32]
	flops, opBytes, opGPUDur           stream.Sparse[int64]
	flopsDtype, opClass, opShape, opKn stream.SparseDict
	opKernels                          stream.Sparse[int32]
	modelledRows                       []int32 // rows opCost gave a cost, in order
	nextModel                          int

	device    int32 // the first GPU activity's device (Trace.Device)
	hasDevice bool

	// during the second pass
	chunkRows int
	off       int // the first row of the chunk being built
	emit      func(*stream.SliceTable) error
}

// TwoPass says whether t was read in two passes: its slices are not in
// t.Slices (which has only their number and call stacks) but come from
// EachChunk.
func (t *Trace) TwoPass() bool { return t.again != nil }

// ReadFileTwoPass reads a trace file in two passes (see secondPass), so
// that its rows are never all in memory: the Trace it returns has
// everything but the slices, which EachChunk reads. A file that turns out
// to hold no slices (a memory timeline, an execution trace) is returned
// read whole.
func ReadFileTwoPass(path string, opt Options) (*Trace, error) {
	opt.slim = true
	return ReadFile(path, opt)
}

// keepForSecondPass is the end of a slim first pass: it moves what finish
// computed out of the slim table, which keeps only its length and stacks.
func (b *builder) keepForSecondPass(path string, opt Options) {
	s, t := b.s, b.t
	sp := &secondPass{path: path, opt: opt, rows: s.Len(),
		step: s.Step, stackID: s.StackID, launchTS: s.LaunchTS, selfDur: s.SelfDur, gpuBusy: s.GPUBusyDur,
		collName: s.CollName, collDtype: s.CollDtype, collIn: s.CollInElems, collOut: s.CollOutElems, collGroups: s.CollGroupSize,
		flops: s.Flops, opBytes: s.OpBytes, opGPUDur: s.OpGPUDur, flopsDtype: s.FlopsDtype, opClass: s.OpClass,
		opShape: s.OpShape, opKn: s.OpKernel, opKernels: s.OpKernels,
		device: b.firstDevice, hasDevice: b.hasDevice}
	if t.HasBaseTime {
		sp.base = t.BaseTimeNS
	}
	if b.flowsBound {
		c := s.Correlation
		sp.corr = &c
	}
	s.DropRows()
	b.flows, b.costs, b.open, b.kernelColl, b.opColl = nil, nil, nil, nil, nil
	b.s, b.t = nil, nil
	sp.b = *b
	sp.modelledRows = b.modelledRows
	sp.b.modelledRows = nil
	t.again = sp
}

// readFlows reads the flows a slim first pass left: a trace with rows
// that lack a correlation id (older Kineto) needs them to bind its
// launches. Most traces give every launch and GPU row its id, and their
// flows, a tenth of the events, would be held for nothing.
func (b *builder) readFlows(path string, opt Options) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	in, err := jsonscan.Open(f, path, "a Chrome-trace JSON object (PyTorch profiler trace)")
	if err != nil {
		return err
	}
	src := in.R
	if in.Gzip != nil && !opt.NoPrefetch {
		pf := newPrefetcher(in.R)
		defer pf.Close()
		src = pf
	}
	opt.slim, opt.SizeHint = false, 0
	p := newParser(src, path, opt)
	fb := *b // its caches (thread ids of string tids) are shared
	fb.t, fb.s, fb.slim, fb.flowsOnly, fb.flows = p.trace, p.trace.Slices, false, true, nil
	p.b = fb
	if err := p.s.Run(func(c *jsonscan.Cursor) bool {
		p.unit(cursor{c})
		return p.state == stDone
	}); err != nil {
		return fmt.Errorf("%s: reading its flows again: %w", path, err)
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

// EachChunk reads a two-pass trace's file again and hands its slices to
// fn in chunks of up to 256K rows, in file order, each complete (as
// TakeRecords would cut them from a table read whole). fn owns each chunk.
// A trace read whole is one chunk.
func (t *Trace) EachChunk(fn func(*stream.SliceTable) error) error {
	sp := t.again
	if sp == nil {
		return fn(t.Slices)
	}
	f, err := os.Open(sp.path)
	if err != nil {
		return err
	}
	defer f.Close()
	in, err := jsonscan.Open(f, sp.path, "a Chrome-trace JSON object (PyTorch profiler trace)")
	if err != nil {
		return err
	}
	src := in.R
	if in.Gzip != nil && !sp.opt.NoPrefetch {
		pf := newPrefetcher(in.R)
		defer pf.Close()
		src = pf
	}
	opt := sp.opt
	opt.slim, opt.SizeHint = false, 0
	p := newParser(src, sp.path, opt)
	// the first pass's strings: the columns it computed hold their ids
	p.trace.Str = sp.b.str
	p.trace.Slices = stream.NewSliceTable(sp.b.str, true)
	sp.chunkRows = chunkRows
	if opt.ChunkRows > 0 {
		sp.chunkRows = opt.ChunkRows
	}
	p.trace.Slices.Reserve(sp.chunkRows)
	b := sp.b // a copy: its caches are shared, its state is its own
	b.t, b.s, b.slim, b.again = p.trace, p.trace.Slices, false, sp
	p.b = b
	sp.off, sp.nextModel, sp.emit = 0, 0, fn
	if err := p.s.Run(func(c *jsonscan.Cursor) bool {
		p.unit(cursor{c})
		return p.state == stDone
	}); err != nil {
		var je *jsonscan.Error
		if errors.As(err, &je) {
			return &FormatError{Path: sp.path, Offset: je.Offset, Msg: "read again for its rows, the file has changed: " + je.Msg}
		}
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
	return nil
}

// flush completes the chunk b has built with what the first pass
// computed for its rows, hands it over and starts the next.
func (sp *secondPass) flush(b *builder) error {
	c := b.s
	lo, hi := sp.off, sp.off+c.Len()
	if hi > sp.rows {
		return fmt.Errorf("%s changed while it was read: more than the %d slices it had the first time", sp.path, sp.rows)
	}
	if sp.base != 0 {
		for i := range c.TS.V {
			c.TS.V[i] += sp.base
		}
	}
	c.Step, c.StackID = sp.step.Range(lo, hi), sp.stackID.Range(lo, hi)
	c.LaunchTS, c.SelfDur, c.GPUBusyDur = sp.launchTS.Range(lo, hi), sp.selfDur.Range(lo, hi), sp.gpuBusy.Range(lo, hi)
	if sp.corr != nil {
		c.Correlation = sp.corr.Range(lo, hi)
	}
	for _, p := range []struct{ dst, src *stream.SparseDict }{
		{&c.CollName, &sp.collName}, {&c.CollDtype, &sp.collDtype}, {&c.FlopsDtype, &sp.flopsDtype},
		{&c.OpClass, &sp.opClass}, {&c.OpShape, &sp.opShape}, {&c.OpKernel, &sp.opKn},
	} {
		p.dst.Sparse = p.src.Range(lo, hi)
	}
	for _, p := range []struct{ dst, src *stream.Sparse[int64] }{
		{&c.CollInElems, &sp.collIn}, {&c.CollOutElems, &sp.collOut}, {&c.Flops, &sp.flops},
		{&c.OpBytes, &sp.opBytes}, {&c.OpGPUDur, &sp.opGPUDur},
	} {
		*p.dst = p.src.Range(lo, hi)
	}
	c.CollGroupSize, c.OpKernels = sp.collGroups.Range(lo, hi), sp.opKernels.Range(lo, hi)
	sp.off = hi
	next := stream.NewSliceTable(c.Str, true)
	next.Reserve(sp.chunkRows)
	b.s, b.t.Slices = next, next
	return sp.emit(c)
}
