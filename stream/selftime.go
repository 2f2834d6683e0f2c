package stream

import (
	"cmp"
	"slices"
)

// AssignSelfTimes gives every host row (isHost) its self time: its
// duration minus the durations of the rows directly nested in it on the
// same thread (pid, tid). Rows that merely overlap without nesting are
// siblings. Other rows get no self time. Every reader calls this once its
// rows are complete, so that all sources agree on what self time is.
func (t *SliceTable) AssignSelfTimes(isHost func(row int) bool) {
	n := t.Len()
	t.SelfDur = Nulls[int64](n)
	type thread struct{ pid, tid int64 }
	byThread := map[thread][]int32{}
	for i := range n {
		if isHost(i) {
			k := thread{t.PID.V[i], t.TID.V[i]}
			byThread[k] = append(byThread[k], int32(i))
		}
	}
	self := t.SelfDur.V
	var stack []int32
	for _, rows := range byThread {
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
			if len(stack) > 0 {
				self[stack[len(stack)-1]] -= t.Dur.V[r]
			}
			stack = append(stack, r)
		}
	}
}
