package stream

import (
	"cmp"
	"slices"
	"sort"
	"strings"
)

// StackNode is one frame of the host call tree of a trace: a host slice's
// kind and name (ids in the table's Strings) under its caller's node. Two
// slices reached through the same chain of callers share a node, so a
// node stands for a call stack.
type StackNode struct {
	Parent     int32 // index of the caller's node, -1 at a root
	Depth      int32 // 0 at a root
	Kind, Name int32
}

// stepPrefix marks the profiler's step annotations. Their frames are one
// node, "ProfilerStep#*", whatever the step: the stack of work inside
// step 5 is the stack of the same work inside step 6.
const stepPrefix = "ProfilerStep#"

// AssignSelfTimes gives every host row (isHost) its self time: its
// duration minus the durations of the rows directly nested in it on the
// same thread (pid, tid). Rows that merely overlap without nesting are
// siblings. It also gives every host row its call stack (StackID, an index
// into Stacks): the chain of host rows enclosing it on its thread. Other
// rows get neither. Last, every host row gets GPUBusyDur (see
// assignGPUBusy). Every reader calls this once its rows are complete, so
// that all sources agree on what self time, a stack and GPU busy time are.
func (t *SliceTable) AssignSelfTimes(isHost func(row int) bool) {
	n := t.Len()
	t.SelfDur = Nulls[int64](n)
	t.StackID = Nulls[int32](n)
	t.Stacks = t.Stacks[:0]
	type thread struct{ pid, tid int64 }
	byThread := map[thread][]int32{}
	for i := range n {
		if isHost(i) {
			pid, tid := t.Thread(i)
			k := thread{pid, tid}
			byThread[k] = append(byThread[k], int32(i))
		}
	}
	// threads in a fixed order, so that stack ids do not depend on map order
	threads := make([]thread, 0, len(byThread))
	for k := range byThread {
		threads = append(threads, k)
	}
	slices.SortFunc(threads, func(a, b thread) int {
		return cmp.Or(cmp.Compare(a.pid, b.pid), cmp.Compare(a.tid, b.tid))
	})
	type frame struct{ parent, kind, name int32 }
	nodes := map[frame]int32{}
	stepName := map[int32]int32{} // a step annotation's name id -> "ProfilerStep#*"
	frameName := func(name int32) int32 {
		if id, ok := stepName[name]; ok {
			return id
		}
		id := name
		if strings.HasPrefix(t.Str.Get(name), stepPrefix) {
			id = t.Str.ID(stepPrefix + "*")
		}
		stepName[name] = id
		return id
	}
	self := t.SelfDur.V
	var stack []int32
	for _, k := range threads {
		rows := byThread[k]
		byStart := func(x, y int32) int {
			if c := cmp.Compare(t.TS.V[x], t.TS.V[y]); c != 0 {
				return c
			}
			return cmp.Compare(t.Dur.V[y], t.Dur.V[x]) // the longer one encloses
		}
		if !slices.IsSortedFunc(rows, byStart) { // host events usually come in order
			slices.SortFunc(rows, byStart)
		}
		stack = stack[:0]
		for _, r := range rows {
			start, end := t.TS.V[r], t.TS.V[r]+t.Dur.V[r]
			for len(stack) > 0 {
				top := stack[len(stack)-1]
				if start < t.TS.V[top]+t.Dur.V[top] && end <= t.TS.V[top]+t.Dur.V[top] {
					break
				}
				stack = stack[:len(stack)-1]
			}
			t.SelfDur.Set(int(r), t.Dur.V[r])
			f := frame{parent: -1, kind: t.Kind.V[r], name: frameName(t.Name.V[r])}
			depth := int32(0)
			if len(stack) > 0 {
				caller := stack[len(stack)-1]
				self[caller] -= t.Dur.V[r]
				f.parent = t.StackID.V[caller]
				depth = t.Stacks[f.parent].Depth + 1
			}
			id, ok := nodes[f]
			if !ok {
				id = int32(len(t.Stacks))
				nodes[f] = id
				t.Stacks = append(t.Stacks, StackNode{Parent: f.parent, Depth: depth, Kind: f.kind, Name: f.name})
			}
			t.StackID.Set(int(r), id)
			stack = append(stack, r)
		}
	}
	t.assignGPUBusy(isHost)
}

// assignGPUBusy gives every host row the part of its interval during which
// the trace's GPU work (GPUKinds, any stream) ran: the overlap of [ts,
// ts+dur) with the union of the GPU rows' intervals. dur minus it is the
// time the GPU waited while the host was in this call, which the exposure
// detectors sum; computing it here, once per trace in a sorted sweep,
// saves them an ASOF join per query.
func (t *SliceTable) assignGPUBusy(isHost func(row int) bool) {
	n := t.Len()
	t.GPUBusyDur = Nulls[int64](n)
	gpu := map[int32]bool{}
	for _, k := range GPUKinds {
		if id, ok := t.Str.ids[k]; ok {
			gpu[id] = true
		}
	}
	type span struct{ s, e int64 }
	isGPU := func(i int) bool { return gpu[t.Kind.V[i]] && t.Dur.V[i] >= 0 }
	m := 0
	for i := range n {
		if isGPU(i) {
			m++
		}
	}
	iv := make([]span, 0, m) // counted first: a big trace's GPU rows are millions
	for i := range n {
		if isGPU(i) {
			iv = append(iv, span{t.TS.V[i], t.TS.V[i] + t.Dur.V[i]})
		}
	}
	slices.SortFunc(iv, func(a, b span) int { return cmp.Or(cmp.Compare(a.s, b.s), cmp.Compare(a.e, b.e)) })
	// the union as islands, touching intervals merged, with the busy time
	// before each; built in place (an island never runs ahead of the
	// interval being read)
	isl := iv[:0]
	for _, x := range iv {
		if k := len(isl) - 1; k >= 0 && x.s <= isl[k].e {
			isl[k].e = max(isl[k].e, x.e)
			continue
		}
		isl = append(isl, x)
	}
	before := make([]int64, len(isl))
	for i := 1; i < len(isl); i++ {
		before[i] = before[i-1] + isl[i-1].e - isl[i-1].s
	}
	// busy time up to instant x
	upTo := func(x int64) int64 {
		j := sort.Search(len(isl), func(k int) bool { return isl[k].s > x }) - 1
		if j < 0 {
			return 0
		}
		return before[j] + min(x, isl[j].e) - isl[j].s
	}
	for i := range n {
		if isHost(i) {
			s := t.TS.V[i]
			t.GPUBusyDur.Set(i, upTo(s+t.Dur.V[i])-upTo(s))
		}
	}
}
