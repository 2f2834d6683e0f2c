package nsys

import (
	"cmp"
	"database/sql"
	"slices"

	"github.com/trainscope/trainscope/ingest/kineto"
	"github.com/trainscope/trainscope/ingest/timeline"
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

// gpuSide: the kinds that run on a device stream and take the step of the
// call that launched them.
func (k kind) gpuSide() bool { return k <= kSync }

// host: the kinds that nest on a host thread and get a self time.
func (k kind) host() bool { return k >= kRuntime }

// builder fills one trace.
type builder struct {
	t      *kineto.Trace
	s      *stream.SliceTable
	str    *stream.Strings
	base   int64
	kinds  [nKinds]int32
	rowKnd []kind // kind of every row, to avoid mapping ids back
	counts [nKinds]int
	cats   map[string]int32
	ids    map[int64]int32 // StringIds id -> string id, for names used as they are
	// caches of what a name says, keyed by the ids that make it
	kernels map[[2]int64]kernelInfo
	copies  map[[3]int64]copyInfo
	apis    map[int64]apiInfo

	profSteps, otherSteps map[int32]*span
	comm                  bool // saw an NCCL kernel
	unterminated          int  // NVTX ranges without an end
}

type span struct{ start, end int64 }

func newBuilder(path string, base int64, hasBase bool) *builder {
	str := stream.NewStrings()
	t := &kineto.Trace{
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
		profSteps: map[int32]*span{}, otherSteps: map[int32]*span{}}
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
	b.rowKnd = append(b.rowKnd, r.kind)
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
		sp.start, sp.end = min(sp.start, start), max(sp.end, end)
	} else {
		m[n] = &span{start, end}
	}
}

// finish resolves what needs every row: steps, launches, self times, the
// span and the counts.
func (b *builder) finish() {
	t, s := b.t, b.s
	n := s.Len()
	steps := b.profSteps
	if len(steps) == 0 {
		steps = b.otherSteps
	}
	nums := make([]int32, 0, len(steps))
	for k := range steps {
		nums = append(nums, k)
	}
	slices.SortFunc(nums, func(x, y int32) int {
		if a, c := steps[x].start, steps[y].start; a != c {
			return cmp.Compare(a, c)
		}
		return int(x - y)
	})
	for _, k := range nums {
		t.Steps.Step.Append(k)
		t.Steps.Start.Append(steps[k].start)
		t.Steps.End.Append(steps[k].end)
	}
	b.assignSteps(n)
	b.assignSelfTimes(n)
	t.Account = timeline.Account(s, &t.Steps)

	for i := range n {
		st, en := s.TS.V[i], s.TS.V[i]+s.Dur.V[i]
		if i == 0 || st < t.StartNS {
			t.StartNS = st
		}
		if i == 0 || en > t.EndNS {
			t.EndNS = en
		}
	}
	if b.comm {
		t.Dist.Backend = "nccl"
	}
	t.Counts["events"] = n + t.Counters.Len()
	for k, c := range b.counts {
		if c > 0 {
			t.Counts["kind:"+kindNames[k]] = c
		}
	}
	t.Counts["steps"] = t.Steps.Len()
	if t.Counters.Len() > 0 {
		t.Counts["counters"] = t.Counters.Len()
	}
	if b.unterminated > 0 {
		t.Counts["nvtx_unterminated"] = b.unterminated
	}
}

// assignSteps gives host rows the step whose range holds their start and
// GPU rows (and GPU-side sync records) the step and start of the runtime
// call with their correlation id, as the Kineto reader does (after HTA).
func (b *builder) assignSteps(n int) {
	s, t := b.s, b.t
	s.Step = stream.Nulls[int32](n)
	s.LaunchTS = stream.Nulls[int64](n)
	stepAt := t.Steps.At
	launches := make(map[int64]int32, b.counts[kRuntime]+b.counts[kDriver])
	for i := range n {
		k := b.rowKnd[i]
		if k.gpuSide() {
			continue
		}
		if step, ok := stepAt(s.TS.V[i]); ok {
			s.Step.Set(i, step)
		}
		if (k == kRuntime || k == kDriver) && s.Correlation.Valid(i) {
			launches[s.Correlation.V[i]] = int32(i)
		}
	}
	for i := range n {
		if !b.rowKnd[i].gpuSide() || !s.Correlation.Valid(i) {
			continue
		}
		j, ok := launches[s.Correlation.V[i]]
		if !ok {
			continue
		}
		s.LaunchTS.Set(i, s.TS.V[j])
		if s.Step.Valid(int(j)) {
			s.Step.Set(i, s.Step.V[j])
		}
	}
}

// assignSelfTimes gives every host row its self time (see
// stream.SliceTable.AssignSelfTimes).
func (b *builder) assignSelfTimes(int) {
	b.s.AssignSelfTimes(func(i int) bool { return b.rowKnd[i].host() })
}
