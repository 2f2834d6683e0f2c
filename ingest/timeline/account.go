package timeline

import (
	"cmp"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/stream"
)

// loaderRE names the data loader's frames and operators.
var loaderRE = regexp.MustCompile(`(?i)enumerate\(DataLoader\)|DataLoaderIter|_next_data|dataloader\.py|collate|fetch\.py|__getitem__`)

// loaderNames is loaderRE's answer by name across the traces of the
// process: the ranks of a run share their operator and frame names, and
// matching them again in each file was 0.67 s of CPU in r512's 512 files.
// It keeps at most maxLoaderNames answers.
var loaderNames sync.Map // string -> bool

var loaderNamesLen atomic.Int64

const maxLoaderNames = 1 << 16

// isLoaderName says whether name is one of the data loader's frames or
// operators (loaderRE).
func isLoaderName(name string) bool {
	if v, ok := loaderNames.Load(name); ok {
		return v.(bool)
	}
	v := loaderRE.MatchString(name)
	if loaderNamesLen.Load() < maxLoaderNames {
		if _, had := loaderNames.LoadOrStore(strings.Clone(name), v); !had {
			loaderNamesLen.Add(1)
		}
	}
	return v
}

// blockingNS is how long a runtime call must last to count as one that
// waited for the GPU when the GPU ran dry inside it: a launch returns in
// microseconds.
const blockingNS = 10_000

// kindIDs are the string ids of the slice kinds in a table (-1 if absent).
type kindIDs struct {
	kernel, comm, memcpy, memset, runtime, driver, cpuOp, python, annotation int32
}

func kindsOf(str *stream.Strings) kindIDs {
	id := func(k string) int32 {
		if v, ok := str.Lookup(k); ok {
			return v
		}
		return -1
	}
	return kindIDs{id(stream.KindKernel), id(stream.KindComm), id(stream.KindMemcpy), id(stream.KindMemset),
		id(stream.KindRuntime), id(stream.KindDriver), id(stream.KindCPUOp), id(stream.KindPython), id(stream.KindAnnotation)}
}

// busy classes of the GPU, most telling first
const (
	busyCompute = iota
	busyComm
	busyCopy
	busyIdle
)

// activity is one GPU row.
type activity struct {
	s, e  int64
	row   int32
	class uint8
	sub   int32 // busyCopy, busyComm: index into subs
}

// window is one step's window on the GPU timeline.
type window struct {
	step       int32
	start, end int64
	complete   bool
}

// Account is the step-time account of one rank's trace (see
// stream.AccountRow): s holds every row of the trace, with steps, call
// stacks and launch links assigned (AssignSelfTimes has run), and steps
// its ProfilerStep ranges. A trace without steps is one window, step -1.
func Account(s *stream.SliceTable, steps *stream.StepTable) []stream.AccountRow {
	k := kindsOf(s.Str)
	n := s.Len()
	if n == 0 {
		return nil
	}
	a := &accounter{s: s, k: k}
	a.activities()
	if len(a.acts) == 0 {
		return nil
	}
	a.windows(steps)
	a.hostThreads()
	a.sweep()
	return a.rows()
}

type accounter struct {
	s    *stream.SliceTable
	k    kindIDs
	acts []activity // sorted by start
	subs []string   // copy and collective subjects ("HtoD pageable", "allreduce" ...)
	// subClass is each subject's class (busyCopy, busyComm)
	subClass []uint8
	wins     []window
	// the launch call of each GPU row's correlation id
	launchOf map[int64]int32
	// host threads: their rows flattened into innermost segments
	threads map[[2]int64]*hostThread
	main    *hostThread // the thread that launched the most GPU work
	// byLaunches are the threads, the most launches first
	byLaunches []*hostThread
	agg        map[aggKey]*stream.AccountRow
	winAt      int // the window cursor of add
	// callClasses: each call name's class (callClass), by name id
	callClasses map[int32]uint8
}

func (a *accounter) isCall(i int) bool {
	k := a.s.Kind.V[i]
	return k == a.k.runtime || k == a.k.driver
}

// blocks says whether row r is a runtime or driver call that waited for
// the GPU when the GPU ran dry inside it: a synchronization by name
// (cudaStreamSynchronize, a blocking cudaMemcpy ...) however short (one
// that finds the queue nearly drained returns in microseconds, and the GPU
// then waits for all the host does before its next launch), or another
// call long enough to have waited (blockingNS) that can wait: not a launch
// (cudaLaunchKernel, cuLaunchKernelEx, cudaGraphLaunch, hipLaunchKernel
// ...), which only blocks on a full queue, when the GPU is busy. A launch
// slowed by the profiler (tens of us each with CUPTI on) while the GPU ran
// dry is launch overhead, not a sync (a tiny MLP traced on an H100 had
// 9.7 ms a step of such "syncs" in aten::addcdiv_ and the like).
func (a *accounter) blocks(r int32) bool {
	if !a.isCall(int(r)) {
		return false
	}
	c := a.callClass(a.s.Name.V[r])
	return c == callSync || c == callOther && a.s.Dur.V[r] >= blockingNS
}

// call classes by name (callClass)
const (
	callOther uint8 = iota
	callLaunch
	callSync
)

// callClass says whether a call's name is a launch's, a synchronization's
// (the names sync_api and bottleneck_class count) or another's, by name id.
func (a *accounter) callClass(id int32) uint8 {
	c, ok := a.callClasses[id]
	if !ok {
		name := a.s.Str.Get(id)
		switch {
		case strings.Contains(name, "Launch"):
			c = callLaunch
		case strings.Contains(name, "Synchronize"), name == "cudaMemcpy", name == "hipMemcpy", name == "cudaMemset", name == "hipMemset":
			c = callSync
		}
		if a.callClasses == nil {
			a.callClasses = map[int32]uint8{}
		}
		a.callClasses[id] = c
	}
	return c
}

func (a *accounter) isHost(i int) bool {
	k := a.s.Kind.V[i]
	return k == a.k.cpuOp || k == a.k.python || k == a.k.annotation || k == a.k.runtime || k == a.k.driver
}

// activities collects the GPU rows and the launch calls.
func (a *accounter) activities() {
	s, k := a.s, a.k
	a.launchOf = map[int64]int32{}
	type subKey struct {
		class uint8
		sub   string
	}
	subIdx := map[subKey]int32{}
	for i := range s.Len() {
		kind := s.Kind.V[i]
		if a.isCall(i) && s.Correlation.Valid(i) {
			a.launchOf[s.Correlation.V[i]] = int32(i)
		}
		var class uint8
		switch kind {
		case k.kernel:
			class = busyCompute
		case k.comm:
			class = busyComm
		case k.memcpy, k.memset:
			class = busyCopy
		default:
			continue
		}
		if s.Dur.V[i] < 0 {
			continue
		}
		act := activity{s: s.TS.V[i], e: s.TS.V[i] + s.Dur.V[i], row: int32(i), class: class}
		var sub string
		switch {
		case class == busyCopy && kind == k.memcpy:
			c := gpu.ParseCopy(s.Str.Get(s.Name.V[i]))
			sub = strings.TrimSpace(cmp.Or(c.Kind, "copy") + " " + c.HostMem)
		case class == busyCopy:
			sub = "memset"
		case class == busyComm:
			// the collective (its name in the trace's arguments), else its
			// kernel
			sub = s.Str.Get(s.Name.V[i])
			if at, ok := slices.BinarySearch(s.CollName.Rows, int32(i)); ok {
				sub = cmp.Or(s.Str.Get(s.CollName.Vals[at]), sub)
			}
		}
		if class == busyCopy || class == busyComm {
			key := subKey{class, sub}
			id, ok := subIdx[key]
			if !ok {
				id = int32(len(a.subs))
				subIdx[key] = id
				a.subs = append(a.subs, sub)
				a.subClass = append(a.subClass, class)
			}
			act.sub = id
		}
		a.acts = append(a.acts, act)
	}
	// comparisons spelled out: cmp.Or evaluates every one of its arguments
	slices.SortFunc(a.acts, func(x, y activity) int {
		if x.s != y.s {
			return cmp.Compare(x.s, y.s)
		}
		if x.e != y.e {
			return cmp.Compare(x.e, y.e)
		}
		return cmp.Compare(x.row, y.row)
	})
}

// windows makes each step's window: from the end of the previous step's
// GPU work (the first: from its host start or first activity, or from the
// end of the GPU work launched before the capture, whichever is later) to
// the end of its own GPU work (the GPU rows take the step of their
// launch).
func (a *accounter) windows(steps *stream.StepTable) {
	s := a.s
	type st struct {
		step               int32
		hostStart, hostEnd int64
		gpuStart, gpuEnd   int64
		acts               int
	}
	var list []*st
	byStep := map[int32]*st{}
	for i := range steps.Len() {
		x := &st{step: steps.Step.V[i], hostStart: steps.Start.V[i], hostEnd: steps.End.V[i], gpuStart: -1, gpuEnd: -1}
		list = append(list, x)
		byStep[x.step] = x
	}
	if len(list) == 0 {
		a.wins = []window{{step: -1, start: min(a.acts[0].s, a.firstHost()), end: a.lastEnd(), complete: true}}
		return
	}
	slices.SortFunc(list, func(x, y *st) int { return cmp.Or(cmp.Compare(x.hostStart, y.hostStart), cmp.Compare(x.step, y.step)) })
	for _, act := range a.acts {
		if !s.Step.Valid(int(act.row)) {
			continue
		}
		x := byStep[s.Step.V[act.row]]
		if x == nil {
			continue
		}
		if x.gpuStart < 0 || act.s < x.gpuStart {
			x.gpuStart = act.s
		}
		x.gpuEnd = max(x.gpuEnd, act.e)
		x.acts++
	}
	// the GPU work queued before the capture began (its launches are not in
	// the trace, so it has no step) that still ran when the first step's
	// did not: the backlog of a GPU-bound job, which ran through the first
	// recorded step's host time and would make that step look a stall
	backlogEnd := int64(-1)
	if first := list[0]; first.gpuStart >= 0 {
		for _, act := range a.acts {
			if act.s >= first.gpuStart {
				break
			}
			if !s.Step.Valid(int(act.row)) {
				backlogEnd = max(backlogEnd, min(act.e, first.gpuStart))
			}
		}
	}
	prev := int64(0)
	for i, x := range list {
		start := prev
		if i == 0 {
			start = x.hostStart
			if x.gpuStart >= 0 {
				start = min(start, x.gpuStart)
			}
			start = max(start, backlogEnd)
		}
		end := x.gpuEnd
		if end < 0 {
			end = x.hostEnd
		}
		end = max(end, start)
		a.wins = append(a.wins, window{step: x.step, start: start, end: end, complete: true})
		prev = end
	}
	// the last step is often cut short by the end of the trace: complete
	// only when it is as long, and launched as much, as the others' median
	if last := len(list) - 1; last > 0 {
		var lens, counts []int64
		for i := range last {
			lens = append(lens, a.wins[i].end-a.wins[i].start)
			counts = append(counts, int64(list[i].acts))
		}
		w := &a.wins[last]
		w.complete = 2*(w.end-w.start) >= median(lens) && 2*int64(list[last].acts) >= median(counts)
	}
}

func median(xs []int64) int64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

func (a *accounter) firstHost() int64 {
	first := a.acts[0].s
	for i := range a.s.Len() {
		if a.isHost(i) {
			first = min(first, a.s.TS.V[i])
		}
	}
	return first
}

func (a *accounter) lastEnd() int64 {
	end := int64(0)
	for _, act := range a.acts {
		end = max(end, act.e)
	}
	return end
}

// aggKey is one row of the account.
type aggKey struct {
	win             int
	category, cause string
	subject         string
	stack           int32
}

// add puts [from, to) of a category and cause into the windows it falls in;
// calls come in time order.
func (a *accounter) add(from, to int64, category, cause, subject string, stack int32) {
	if a.agg == nil {
		a.agg = map[aggKey]*stream.AccountRow{}
	}
	for a.winAt > 0 && a.wins[a.winAt].start > from {
		a.winAt--
	}
	for w := a.winAt; w < len(a.wins) && from < to; w++ {
		win := a.wins[w]
		if win.end <= from {
			a.winAt = w + 1
			continue
		}
		lo, hi := max(from, win.start), min(to, win.end)
		if hi > lo {
			key := aggKey{w, category, cause, subject, stack}
			r := a.agg[key]
			if r == nil {
				r = &stream.AccountRow{Step: win.step, StartNS: win.start, EndNS: win.end, StepComplete: win.complete,
					Category: category, Cause: cause, Subject: subject, StackID: stack, FirstNS: lo}
				a.agg[key] = r
			}
			r.NS += hi - lo
			r.Count++
			r.LongNS = max(r.LongNS, hi-lo)
		}
		if to <= win.end {
			break
		}
	}
}

// sweep walks the GPU timeline over the windows: busy stretches by what
// runs, idle stretches attributed to the launching thread.
func (a *accounter) sweep() {
	type edge struct {
		t     int64
		delta int
		act   int
	}
	edges := make([]edge, 0, 2*len(a.acts))
	for i, act := range a.acts {
		edges = append(edges, edge{act.s, 1, i}, edge{act.e, -1, i})
	}
	slices.SortFunc(edges, func(x, y edge) int {
		if x.t != y.t {
			return cmp.Compare(x.t, y.t)
		}
		return cmp.Compare(x.delta, y.delta)
	})
	var running [3]int
	subRun := make([]int, len(a.subs))
	from, to := a.wins[0].start, a.wins[len(a.wins)-1].end
	cur := from
	state := func() (uint8, int32) {
		for c := range uint8(3) {
			if running[c] > 0 {
				if c == busyCopy || c == busyComm {
					for id, m := range subRun {
						if m > 0 && a.subClass[id] == c {
							return c, int32(id)
						}
					}
				}
				return c, -1
			}
		}
		return busyIdle, -1
	}
	emit := func(t int64) {
		t = min(t, to)
		if t <= cur {
			return
		}
		switch class, sub := state(); class {
		case busyCompute:
			a.add(cur, t, stream.AccountCompute, "kernels", "", -1)
		case busyComm:
			a.add(cur, t, stream.AccountComm, "exposed", a.subs[sub], -1)
		case busyCopy:
			a.add(cur, t, stream.AccountCopy, a.subs[sub], "", -1)
		default:
			a.idle(cur, t)
		}
		cur = t
	}
	for _, e := range edges {
		if e.t > cur {
			emit(e.t)
		}
		act := a.acts[e.act]
		running[act.class] += e.delta
		if act.class == busyCopy || act.class == busyComm {
			subRun[act.sub] += e.delta
		}
	}
	emit(to)
}

// idle attributes the GPU's idle stretch [from, to) to what the thread
// that launches its next work was doing.
func (a *accounter) idle(from, to int64) {
	th := a.main
	launch := int32(-1) // the call that launched the next work
	j := sort.Search(len(a.acts), func(i int) bool { return a.acts[i].s >= to })
	if j < len(a.acts) {
		if c := a.s.Correlation; c.Valid(int(a.acts[j].row)) {
			if call, ok := a.launchOf[c.V[a.acts[j].row]]; ok {
				launch = call
				pid, tid := a.s.Thread(int(call))
				if t := a.threads[[2]int64{pid, tid}]; t != nil {
					th = t
				}
			}
		}
	}
	if th == nil {
		a.add(from, to, stream.AccountIdle, "unrecorded", "", -1)
		return
	}
	// the GPU ran dry while the thread waited in a call: the drain, and
	// all the thread did after it until the next launch, is that call's;
	// so when another thread waited (the main thread in a blocking copy
	// while the autograd thread has the next launch)
	if call := th.blockingAt(a, from); call >= 0 {
		th.drained(a, from, to, th.outerOp(a, call))
		return
	}
	if other, call := a.blockingAnyAt(from); call >= 0 {
		th.drained(a, from, to, other.outerOp(a, call))
		return
	}
	// once the launch call has begun, the GPU waits for the launch: its
	// call and the queue behind it (launch latency), whatever the host does
	if launch >= 0 && th != nil {
		if ls := a.s.TS.V[launch]; ls > from && ls < to {
			th.attribute(a, from, ls)
			subj := th.nearestOp(a, launch)
			a.add(ls, to, stream.AccountIdle, "launch", a.name(subj), a.stack(subj))
			return
		} else if ls <= from {
			subj := th.nearestOp(a, launch)
			a.add(from, to, stream.AccountIdle, "launch", a.name(subj), a.stack(subj))
			return
		}
	}
	th.attribute(a, from, to)
}

// blockingAnyAt is a thread blocked in a call at instant x, and the call;
// the thread that launched the most GPU work first.
func (a *accounter) blockingAnyAt(x int64) (*hostThread, int32) {
	for _, t := range a.byLaunches {
		if call := t.blockingAt(a, x); call >= 0 {
			return t, call
		}
	}
	return nil, -1
}

func (a *accounter) name(row int32) string {
	name := a.s.Str.Get(a.s.Name.V[row])
	if strings.HasPrefix(name, "ProfilerStep#") {
		return "ProfilerStep#*"
	}
	return name
}

// rows are the account's rows in step, category, cause and time order.
func (a *accounter) rows() []stream.AccountRow {
	out := make([]stream.AccountRow, 0, len(a.agg))
	for _, r := range a.agg {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(x, y stream.AccountRow) int {
		// spelled out, not cmp.Or: that compares the strings of every pair
		if x.StartNS != y.StartNS {
			return cmp.Compare(x.StartNS, y.StartNS)
		}
		if c := cmp.Compare(categoryOrder(x.Category), categoryOrder(y.Category)); c != 0 {
			return c
		}
		if c := strings.Compare(x.Cause, y.Cause); c != 0 {
			return c
		}
		if x.NS != y.NS {
			return cmp.Compare(y.NS, x.NS)
		}
		if c := strings.Compare(x.Subject, y.Subject); c != 0 {
			return c
		}
		return cmp.Compare(x.StackID, y.StackID)
	})
	return out
}

// categoryOrder is the place of an account category in rows' order (a
// switch: a map looked up twice a comparison was most of the sort).
func categoryOrder(c string) int {
	switch c {
	case stream.AccountCompute:
		return 0
	case stream.AccountComm:
		return 1
	case stream.AccountCopy:
		return 2
	case stream.AccountIdle:
		return 3
	}
	return 0 // as the map's missing key did
}
