package timeline

import (
	"cmp"
	"slices"
	"sort"
	"strings"

	"github.com/trainscope/trainscope/stream"
)

// hostThread is one host thread's recorded events as a tree (each row
// under the row that encloses it) and as the sequence of its innermost
// events over time.
type hostThread struct {
	// parent: row -> enclosing row on the thread, -1 at a root (shared by
	// every thread of the trace, indexed by row)
	parent []int32
	// launches: the row is a launch call, or encloses one (shared too)
	launches []bool
	// loader: the outermost data-loader frame enclosing the row (itself
	// included), when there is one
	loader   map[int32]int32
	segs     []segment
	launched int // GPU activities this thread launched
	key      [2]int64
}

// segment is a stretch of a thread's time whose innermost recorded event
// is row (-1: none).
type segment struct {
	s, e int64
	row  int32
}

// threadRow is a host row with its start and end, for sorting.
type threadRow struct {
	ts, end int64
	row     int32
}

// answers kept in an []int8 by name id; 0 is not asked yet
const (
	no  = 1
	yes = 2
)

func yesNo(v bool) int8 {
	if v {
		return yes
	}
	return no
}

// hostThreads builds every host thread's tree and segments.
func (a *accounter) hostThreads() {
	s := a.s
	gpuCorr := make(map[int64]bool, len(a.acts))
	for _, act := range a.acts {
		if s.Correlation.Valid(int(act.row)) {
			gpuCorr[s.Correlation.V[act.row]] = true
		}
	}
	// the profiler's step ranges are containers, not work: time in a step
	// that no event inside it covers was not recorded
	// answers by name id, in slices rather than maps (0: not asked yet):
	// looked up once a row, the maps were a third of this walk
	stepNames := make([]int8, s.Str.Len())
	var keys [][2]int64    // the threads in order of their first row
	var byThread [][]int32 // their rows
	threadAt := map[[2]int64]int{}
	last := -1 // the thread of the previous row: rows come in runs of one thread
	for i := range s.Len() {
		if a.isHost(i) && s.Dur.V[i] >= 0 {
			if name := s.Name.V[i]; s.Kind.V[i] == a.k.annotation {
				if stepNames[name] == 0 {
					stepNames[name] = yesNo(strings.HasPrefix(s.Str.Get(name), "ProfilerStep#"))
				}
				if stepNames[name] == yes {
					continue
				}
			}
			pid, tid := s.Thread(i)
			key := [2]int64{pid, tid}
			if last < 0 || keys[last] != key {
				j, ok := threadAt[key]
				if !ok {
					j = len(keys)
					threadAt[key] = j
					keys, byThread = append(keys, key), append(byThread, nil)
				}
				last = j
			}
			byThread[last] = append(byThread[last], int32(i))
		}
	}
	// the loader's frames, by name id: a regexp per row cost 2 s on syn8
	loaderName := make([]int8, s.Str.Len())
	isLoader := func(name int32) bool {
		if loaderName[name] == 0 {
			loaderName[name] = yesNo(isLoaderName(s.Str.Get(name)))
		}
		return loaderName[name] == yes
	}
	a.threads = make(map[[2]int64]*hostThread, len(byThread))
	parent, launches := make([]int32, s.Len()), make([]bool, s.Len())
	var sorted []threadRow // reused from thread to thread
	for ti, rows := range byThread {
		key := keys[ti]
		// a row opens at most two segments (its start, its end): sized for
		// them, the segments never grow (regrowing was a tenth of this walk)
		t := &hostThread{parent: parent, launches: launches, loader: map[int32]int32{},
			segs: make([]segment, 0, 2*len(rows)+1)}
		// by start, the longer first: sorted on copies of the times, as
		// looking them up in the columns on every comparison cost more
		// than the rest of the walk
		sorted = sorted[:0]
		for _, r := range rows {
			sorted = append(sorted, threadRow{s.TS.V[r], s.TS.V[r] + s.Dur.V[r], r})
		}
		slices.SortFunc(sorted, func(x, y threadRow) int {
			if x.ts != y.ts {
				return cmp.Compare(x.ts, y.ts)
			}
			if x.end != y.end {
				return cmp.Compare(y.end, x.end)
			}
			return cmp.Compare(x.row, y.row)
		})
		type open struct {
			row int32
			end int64
		}
		var stack []open
		cur := sorted[0].ts
		emit := func(to int64) {
			if to <= cur {
				return
			}
			row := int32(-1)
			if len(stack) > 0 {
				row = stack[len(stack)-1].row
			}
			if n := len(t.segs); n > 0 && t.segs[n-1].row == row && t.segs[n-1].e == cur {
				t.segs[n-1].e = to
			} else {
				t.segs = append(t.segs, segment{cur, to, row})
			}
			cur = to
		}
		for _, sr := range sorted {
			r, ts, end := sr.row, sr.ts, sr.end
			// a row that does not fit inside the open one is its sibling,
			// as AssignSelfTimes has it (rounded timestamps make
			// neighbours overlap by a few ns): the open one ends there
			for len(stack) > 0 {
				top := stack[len(stack)-1]
				if ts < top.end && end <= top.end {
					break
				}
				emit(min(top.end, ts))
				stack = stack[:len(stack)-1]
			}
			emit(ts)
			p := int32(-1)
			if len(stack) > 0 {
				p = stack[len(stack)-1].row
			}
			t.parent[r] = p
			if isLoader(s.Name.V[r]) {
				t.loader[r] = r
			}
			if l, ok := t.loader[p]; ok {
				t.loader[r] = l
			}
			if a.isCall(int(r)) && s.Correlation.Valid(int(r)) && gpuCorr[s.Correlation.V[r]] {
				t.launched++
				for x := r; x >= 0 && !t.launches[x]; x = t.parent[x] {
					t.launches[x] = true
				}
			}
			stack = append(stack, open{r, end})
		}
		for len(stack) > 0 {
			emit(stack[len(stack)-1].end)
			stack = stack[:len(stack)-1]
		}
		a.threads[key] = t
		t.key = key
		a.byLaunches = append(a.byLaunches, t)
	}
	slices.SortFunc(a.byLaunches, func(x, y *hostThread) int {
		return cmp.Or(cmp.Compare(y.launched, x.launched), cmp.Compare(len(y.segs), len(x.segs)), cmp.Compare(x.key[0], y.key[0]), cmp.Compare(x.key[1], y.key[1]))
	})
	if len(a.byLaunches) > 0 {
		a.main = a.byLaunches[0]
	}
}

// longHostNS is how long a frame of host work must run to be a cause of its
// own when it follows a drain (a checkpoint after loss.item()), rather than
// the sync's (the NaN check on the value it read).
const longHostNS = 1_000_000

// drained attributes an idle stretch that began while the GPU drained for
// a synchronizing call (sub, an operator or the call): the sync's, but for
// the data loader and long host work the thread runs meanwhile, which would
// hold the GPU up with or without the sync.
func (t *hostThread) drained(a *accounter, from, to int64, sub int32) {
	cur := from
	flush := func(end int64) {
		if end > cur {
			a.add(cur, end, stream.AccountIdle, "sync", a.name(sub), a.stack(sub))
			cur = end
		}
	}
	for i := t.at(from); i < len(t.segs) && cur < to; i++ {
		sg := t.segs[i]
		if sg.s >= to {
			break
		}
		if sg.row < 0 {
			continue
		}
		cause, subj := t.classify(a, sg.row)
		if cause == "input" || cause == "host" && a.s.Dur.V[subj] >= longHostNS {
			lo, hi := max(sg.s, cur), min(sg.e, to)
			flush(lo)
			a.add(lo, hi, stream.AccountIdle, cause, a.name(subj), a.stack(subj))
			cur = hi
		}
	}
	flush(to)
}

// at is the index of the segment that holds instant x, or of the first
// after it.
func (t *hostThread) at(x int64) int {
	return sort.Search(len(t.segs), func(i int) bool { return t.segs[i].e > x })
}

// blockingAt is the call the thread was blocked in at instant x (a runtime
// or driver call that can block (blocks), started before x and ended after
// it), or -1.
func (t *hostThread) blockingAt(a *accounter, x int64) int32 {
	i := t.at(x)
	if i >= len(t.segs) || t.segs[i].s > x {
		return -1
	}
	s := a.s
	for r := t.segs[i].row; r >= 0; r = t.parent[r] {
		if a.blocks(r) && s.TS.V[r] <= x && s.TS.V[r]+s.Dur.V[r] > x {
			return r
		}
	}
	return -1
}

// outerOp is the outermost operator enclosing a call (aten::item around
// cudaMemcpyAsync and cudaStreamSynchronize), or the call itself.
func (t *hostThread) outerOp(a *accounter, call int32) int32 {
	out := call
	for r := t.parent[call]; r >= 0; r = t.parent[r] {
		if a.s.Kind.V[r] == a.k.cpuOp {
			out = r
		}
	}
	return out
}

// nearestOp is the innermost operator enclosing row (itself included), else
// its innermost Python frame or annotation that is not a step, else row.
func (t *hostThread) nearestOp(a *accounter, row int32) int32 {
	for r := row; r >= 0; r = t.parent[r] {
		if a.s.Kind.V[r] == a.k.cpuOp {
			return r
		}
	}
	return row
}

// classify says what an instant inside row is: its cause, and the row that
// names it.
func (t *hostThread) classify(a *accounter, row int32) (string, int32) {
	if l, ok := t.loader[row]; ok {
		return "input", l
	}
	if a.isCall(int(row)) || t.launches[row] {
		// launching, or framework work around the launches
		return "launch", t.nearestOp(a, row)
	}
	// work that feeds the GPU nothing: named by its outermost such frame
	top := row
	for p := t.parent[row]; p >= 0 && !t.launches[p]; p = t.parent[p] {
		top = p
	}
	return "host", top
}

// attribute adds the idle stretch [from, to) by what the thread's
// innermost events were.
func (t *hostThread) attribute(a *accounter, from, to int64) {
	t.walk(from, to, func(lo, hi int64, row int32) {
		if row < 0 {
			a.unrecorded(t, lo, hi)
			return
		}
		cause, subj := t.classify(a, row)
		a.add(lo, hi, stream.AccountIdle, cause, a.name(subj), a.stack(subj))
	})
}

// walk calls fn for each stretch of [from, to) in time order with the
// thread's innermost event there (-1 where it recorded none).
func (t *hostThread) walk(from, to int64, fn func(lo, hi int64, row int32)) {
	cur := from
	for i := t.at(from); i < len(t.segs) && cur < to; i++ {
		sg := t.segs[i]
		if sg.s >= to {
			break
		}
		if sg.s > cur {
			fn(cur, sg.s, -1)
			cur = sg.s
		}
		end := min(sg.e, to)
		fn(cur, end, sg.row)
		cur = end
	}
	if cur < to {
		fn(cur, to, -1)
	}
}

// unrecorded attributes [from, to), where the launching thread t recorded
// nothing, to a thread that did: one blocked in a call there (sync), else
// the main launching thread's work; unrecorded only when no thread has
// anything.
func (a *accounter) unrecorded(t *hostThread, from, to int64) {
	for from < to {
		// a thread blocked in a call through part of it
		var best *hostThread
		var call int32 = -1
		var callEnd int64
		for _, o := range a.byLaunches {
			if o == t {
				continue
			}
			if c := o.blockingAt(a, from); c >= 0 {
				best, call, callEnd = o, c, a.s.TS.V[c]+a.s.Dur.V[c]
				break
			}
		}
		if call >= 0 {
			end := min(to, callEnd)
			subj := best.outerOp(a, call)
			a.add(from, end, stream.AccountIdle, "sync", a.name(subj), a.stack(subj))
			from = end
			continue
		}
		// else what the main thread did, up to the next blocking call of any thread
		next := to
		for _, o := range a.byLaunches {
			if o == t {
				continue
			}
			if s := o.nextBlockingStart(a, from, to); s < next {
				next = s
			}
		}
		if m := a.main; m != nil && m != t {
			m.attributeOther(a, from, next)
		} else {
			a.add(from, next, stream.AccountIdle, "unrecorded", "", -1)
		}
		from = next
	}
}

// nextBlockingStart is the start of the thread's first blocking call that
// begins in (from, to), or to.
func (t *hostThread) nextBlockingStart(a *accounter, from, to int64) int64 {
	for i := t.at(from); i < len(t.segs) && t.segs[i].s < to; i++ {
		for r := t.segs[i].row; r >= 0; r = t.parent[r] {
			if a.blocks(r) {
				if s := a.s.TS.V[r]; s > from && s < to {
					return s
				}
				break
			}
		}
	}
	return to
}

// attributeOther attributes stretches of another thread's idle to this
// thread's work where that explains it (the data loader, or host work that
// launches nothing); its launching work does not (it launches on its own
// thread, not the one the GPU waits for), nor does nothing: unrecorded.
func (t *hostThread) attributeOther(a *accounter, from, to int64) {
	t.walk(from, to, func(lo, hi int64, row int32) {
		if row >= 0 {
			if cause, subj := t.classify(a, row); cause == "input" || cause == "host" {
				a.add(lo, hi, stream.AccountIdle, cause, a.name(subj), a.stack(subj))
				return
			}
		}
		a.add(lo, hi, stream.AccountIdle, "unrecorded", "", -1)
	})
}

func (a *accounter) stack(row int32) int32 {
	if a.s.StackID.Valid(int(row)) {
		return a.s.StackID.V[row]
	}
	return -1
}
