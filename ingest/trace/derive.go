package trace

import (
	"cmp"
	"slices"

	"github.com/trainscope/trainscope/ingest/timeline"
	"github.com/trainscope/trainscope/stream"
)

// Span is one step's range, ns since the epoch.
type Span struct{ Start, End int64 }

// DeriveOptions say what differs between readers in Derive.
type DeriveOptions struct {
	// SyncLaunched: synchronization rows (kind sync) take the step and
	// start of the call that launched them, as GPU work does. nsys's come
	// from CUPTI's synchronization records, which carry the correlation
	// id of the API call that waited; the Kineto reader gives its
	// cuda_sync rows no step.
	SyncLaunched bool
}

// Derive resolves what needs every row of t.Slices, for every reader
// alike, and returns the launch times of GPU work as (row, value) pairs
// (a reader that holds the rows whole sets Slices.LaunchTS from them;
// Kineto's first pass of a trace too big to hold keeps them for the
// second):
//
//   - t.Steps from steps, in order of start (then number);
//   - Slices.Step: host work (anything but GPU work, GPU annotations and
//     synchronization) takes the step whose range holds its start; GPU
//     work (kernels, collectives, copies, memsets) takes the step of the
//     runtime or driver call with its correlation id, and that call's
//     start as its launch time (as HTA does);
//   - self times and call stacks of host slices (operators, Python
//     frames, annotations, runtime and driver calls);
//   - t.Account, the step-time account;
//   - t.StartNS and t.EndNS, the span of every slice but kind other;
//   - t.Counts["steps"].
func Derive(t *Trace, steps map[int32]*Span, opt DeriveOptions) stream.Sparse[int64] {
	s := t.Slices
	n := s.Len()
	nums := make([]int32, 0, len(steps))
	for k := range steps {
		nums = append(nums, k)
	}
	slices.SortFunc(nums, func(x, y int32) int {
		if c := cmp.Compare(steps[x].Start, steps[y].Start); c != 0 {
			return c
		}
		return int(x - y)
	})
	for _, k := range nums {
		t.Steps.Step.Append(k)
		t.Steps.Start.Append(steps[k].Start)
		t.Steps.End.Append(steps[k].End)
	}
	launch := assignSteps(t, n, opt)
	host := kindSet(s.Str, stream.KindCPUOp, stream.KindPython, stream.KindAnnotation, stream.KindRuntime, stream.KindDriver)
	s.AssignSelfTimes(func(i int) bool { return host[s.Kind.V[i]] })
	t.Account = timeline.Account(s, &t.Steps)
	span(t, n)
	t.Counts["steps"] = t.Steps.Len()
	return launch
}

// kindSet is the string ids of kinds in str; a kind str has never seen
// has no rows.
func kindSet(str *stream.Strings, kinds ...string) map[int32]bool {
	set := make(map[int32]bool, len(kinds))
	for _, k := range kinds {
		if id, ok := str.Lookup(k); ok {
			set[id] = true
		}
	}
	return set
}

// row roles in assignSteps
const (
	roleHost   = iota // the step holding its start
	roleGPU           // the step of the call that launched it
	roleNone          // no step
	roleLaunch        // host work that launches GPU work (runtime, driver)
)

// assignSteps gives every slice its step and GPU work its launch time.
func assignSteps(t *Trace, n int, opt DeriveOptions) stream.Sparse[int64] {
	s := t.Slices
	s.Step = stream.Nulls[int32](n)
	role := map[int32]uint8{}
	for id := range kindSet(s.Str, stream.KindKernel, stream.KindComm, stream.KindMemcpy, stream.KindMemset) {
		role[id] = roleGPU
	}
	for id := range kindSet(s.Str, stream.KindGPUAnnotation) {
		role[id] = roleNone
	}
	for id := range kindSet(s.Str, stream.KindSync) {
		role[id] = roleNone
		if opt.SyncLaunched {
			role[id] = roleGPU
		}
	}
	calls := 0
	for id := range kindSet(s.Str, stream.KindRuntime, stream.KindDriver) {
		role[id] = roleLaunch
		for _, k := range s.Kind.V {
			if k == id {
				calls++
			}
		}
	}
	var launchTS stream.Sparse[int64]
	stepAt := t.Steps.At
	launches := make(map[int64]int32, calls)
	for i := range n {
		r := role[s.Kind.V[i]]
		if r == roleGPU || r == roleNone {
			continue
		}
		if step, ok := stepAt(s.TS.V[i]); ok {
			s.Step.Set(i, step)
		}
		if r == roleLaunch && s.Correlation.Valid(i) {
			launches[s.Correlation.V[i]] = int32(i)
		}
	}
	for i := range n {
		if role[s.Kind.V[i]] != roleGPU || !s.Correlation.Valid(i) {
			continue
		}
		j, ok := launches[s.Correlation.V[i]]
		if !ok {
			continue
		}
		launchTS.Set(i, s.TS.V[j])
		if s.Step.Valid(int(j)) {
			s.Step.Set(i, s.Step.V[j])
		}
	}
	return launchTS
}

// span sets t.StartNS and t.EndNS from every slice but kind other (0, 0
// when there is none).
func span(t *Trace, n int) {
	s := t.Slices
	other, hasOther := s.Str.Lookup(stream.KindOther)
	t.StartNS, t.EndNS = 0, 0
	first := true
	for i := range n {
		if hasOther && s.Kind.V[i] == other {
			continue
		}
		st, en := s.TS.V[i], s.TS.V[i]+s.Dur.V[i]
		if first || st < t.StartNS {
			t.StartNS = st
		}
		if first || en > t.EndNS {
			t.EndNS = en
		}
		first = false
	}
}
