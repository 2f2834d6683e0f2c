package nsys

import (
	"database/sql"

	"github.com/trainscope/trainscope/ingest/trace"
	"github.com/trainscope/trainscope/stream"
)

type (
	nullInt    = sql.NullInt64
	nullString = sql.NullString
	nullFloat  = sql.NullFloat64
)

// kind indexes kindNames.
type kind int

const (
	kKernel kind = iota
	kComm
	kMemcpy
	kMemset
	kSync
	kRuntime
	kDriver
	kCPUOp
	kAnnotation
	nKinds
)

var kindNames = [nKinds]string{stream.KindKernel, stream.KindComm, stream.KindMemcpy, stream.KindMemset, stream.KindSync,
	stream.KindRuntime, stream.KindDriver, stream.KindCPUOp, stream.KindAnnotation}

// builder fills one trace.
type builder struct {
	t      *trace.Trace
	s      *stream.SliceTable
	str    *stream.Strings
	base   int64
	kinds  [nKinds]int32
	counts [nKinds]int
	cats   map[string]int32
	ids    map[int64]int32 // StringIds id -> string id, for names used as they are
	// caches of what a name says, keyed by the ids that make it
	kernels map[[2]int64]kernelInfo
	copies  map[[3]int64]copyInfo
	apis    map[int64]apiInfo

	profSteps, otherSteps map[int32]*trace.Span
	comm                  bool // saw an NCCL kernel
	unterminated          int  // NVTX ranges without an end
}

func newBuilder(path string, base int64, hasBase bool) *builder {
	str := stream.NewStrings()
	t := &trace.Trace{
		Path: path, Format: Format, Str: str,
		Slices:       stream.NewSliceTable(str, true),
		Counts:       map[string]int{},
		ThreadNames:  map[int64]string{},
		ProcessNames: map[int64]string{},
		BaseTimeNS:   base, HasBaseTime: hasBase,
		DisplayTimeUnit: "ns",
		// an export is written from a finished report: nothing is cut off
		Complete: true, HasEvents: true,
	}
	t.Counters.Str = str
	b := &builder{t: t, s: t.Slices, str: str, base: base, cats: map[string]int32{}, ids: map[int64]int32{},
		kernels: map[[2]int64]kernelInfo{}, copies: map[[3]int64]copyInfo{}, apis: map[int64]apiInfo{},
		profSteps: map[int32]*trace.Span{}, otherSteps: map[int32]*trace.Span{}}
	for i, k := range kindNames {
		b.kinds[i] = str.ID(k)
	}
	return b
}

func (b *builder) cat(c string) int32 {
	if id, ok := b.cats[c]; ok {
		return id
	}
	id := b.str.ID(c)
	b.cats[c] = id
	return id
}

func (b *builder) optID(s string) int32 {
	if s == "" {
		return 0
	}
	return b.str.ID(s)
}

// row is one slice before it is appended; times are ns since session start.
type row struct {
	kind       kind
	cat, name  int32
	start, end int64
	pid, tid   int64
	device     nullInt
	stream     nullInt
	corr       nullInt
}

// add appends r and returns its row number.
func (b *builder) add(r *row) int {
	s := b.s
	s.Kind.Append(b.kinds[r.kind])
	s.Cat.Append(r.cat)
	s.Name.Append(r.name)
	s.TS.Append(r.start + b.base)
	s.Dur.Append(max(r.end-r.start, 0))
	s.PID.Append(r.pid)
	s.TID.Append(r.tid)
	s.Device.AppendOpt(int32(r.device.Int64), r.device.Valid)
	s.Stream.AppendOpt(r.stream.Int64, r.stream.Valid)
	s.Correlation.AppendOpt(r.corr.Int64, r.corr.Valid)
	s.ExternalID.AppendNull()
	b.counts[r.kind]++
	return s.Len() - 1
}

// step records a step range (session ns); ProfilerStep ranges win over
// the other patterns when a trace has both.
func (b *builder) step(n int32, profiler bool, start, end int64) {
	m := b.otherSteps
	if profiler {
		m = b.profSteps
	}
	start, end = start+b.base, max(end, start)+b.base
	if sp, ok := m[n]; ok {
		sp.Start, sp.End = min(sp.Start, start), max(sp.End, end)
	} else {
		m[n] = &trace.Span{Start: start, End: end}
	}
}

// finish resolves what needs every row: steps, launches, self times, the
// account and the span as for every reader (trace.Derive), then the
// counts.
func (b *builder) finish() {
	t, s := b.t, b.s
	steps := b.profSteps
	if len(steps) == 0 {
		steps = b.otherSteps
	}
	// CUPTI's synchronization records carry the correlation id of the
	// call that waited: they take its step, as GPU work does
	launchTS := trace.Derive(t, steps, trace.DeriveOptions{SyncLaunched: true})
	s.LaunchTS = launchTS.Dense(s.Len())
	if b.comm {
		t.Dist.Backend = "nccl"
	}
	t.Counts["events"] = s.Len() + t.Counters.Len()
	for k, c := range b.counts {
		if c > 0 {
			t.Counts["kind:"+kindNames[k]] = c
		}
	}
	if t.Counters.Len() > 0 {
		t.Counts["counters"] = t.Counters.Len()
	}
	if b.unterminated > 0 {
		t.Counts["nvtx_unterminated"] = b.unterminated
	}
}
