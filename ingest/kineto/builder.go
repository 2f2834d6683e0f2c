package kineto

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/ingest/jsonscan"
	"github.com/trainscope/trainscope/ingest/trace"
	"github.com/trainscope/trainscope/stream"
)

// builder turns parsed events into the trace's column tables.
type builder struct {
	t   *Trace
	str *stream.Strings
	s   *stream.SliceTable

	kindByCat map[int32]int32 // cat id -> kind id (for cats whose kind does not depend on the name)
	names     map[int32]nameInfo
	kinds     map[string]int32
	raw       map[string]int32 // raw JSON spelling -> string id
	colls     map[string]int32 // raw collective name -> normalised id
	strTIDs   map[string]int64

	cpuSteps, gpuSteps map[int32]*trace.Span
	flows              []flow
	open               map[[2]int64][]pending // B events waiting for their E

	counts       map[int32]int // per kind id
	uncorrelated int           // GPU activities and runtime calls without a correlation id
	nEvents      int
	phCounts     [256]int

	timelineTotals map[int64]int64
	memMetrics     [4]int32

	at        int64 // where the event being committed ends
	badText   int   // distinct names that were not valid UTF-8
	badTextAt int64 // where the first of them is

	longNames   int   // distinct names cut to MaxNameBytes
	longNamesAt int64 // where the first of them is

	negDur   int   // slices whose duration was negative, kept as 0
	negDurAt int64 // where the first of them ends

	opColl     map[int64]opColl // external id -> the collective its host operator issued
	kernelColl []collRef        // communication kernels named only by NCCL

	costs     []opCostRow         // modelled host operators, in row order
	shapes    map[string]int32    // raw Input Dims -> id of its compact form
	opMemo    map[string]costMemo // operator and raw shapes -> its cost (see opCost)
	sharedKey []byte              // the key into opCosts, built in place
	memoKey   []byte              // opCost's key, built again for each call

	sizeHint int64 // the file's JSON bytes, 0 when unknown (see reserve)

	// A two-pass read of a big trace (twopass.go): slim marks its first
	// pass, which keeps only the columns finish reads; again is its
	// second, which reads the rows whole and hands them over in chunks.
	slim  bool
	again *secondPass

	firstDevice  int32 // a slim pass's first GPU activity's device
	hasDevice    bool
	modelledRows []int32              // a slim pass's rows that opCost gave a cost
	flowsBound   bool                 // bindFlows filled some correlation id
	launchTS     stream.Sparse[int64] // a slim pass's launch times (assignSteps)
	flowsSkipped bool                 // a slim pass met flows and left them
	countersLeft bool                 // a slim pass met counters and left them
	flowsOnly    bool                 // readFlows' pass: flows alone
}

// minProjectRows is how many rows a table holds before its growth is
// projected from the bytes read (below it, append's own growth is cheap).
const minProjectRows = 1 << 16

// projectRows is the capacity to give the slice columns when they are full
// at n rows: the rows the whole file will hold at the rate seen so far
// (rows per JSON byte read), plus 5%, but at least an eighth more and at
// most twice as many. Growing by 1.25x each time, as append does, made a
// 1.5 GB trace reallocate every column eight times past its first guess:
// 4 s of page faults, and freed arrays that kept its peak ~75 MB higher.
func (b *builder) projectRows(n int) int {
	grow := n + n/8
	if b.sizeHint > b.at && b.at > 0 {
		proj := int(float64(n) * float64(b.sizeHint) / float64(b.at) * 1.05)
		grow = max(grow, min(proj, 2*n))
	}
	return grow
}

// MaxNameBytes bounds a name or category (the longest real kernel names,
// C++ templates, run to a few KiB); a longer one is cut, with a warning.
const MaxNameBytes = 64 << 10

type flow struct {
	id, pid, tid, ts int64
	ph               byte
}

type pending struct {
	name, cat int32
	ts        int64
}

// nameInfo caches what a kernel or memcpy name says.
type nameInfo struct {
	comm      bool
	coll      int32 // collective name id (0 = none)
	algo      int32
	proto     int32
	copyKind  int32
	hostMem   int32
	stepNo    int32 // N of "ProfilerStep#N", or -1
	recParams bool  // record_param_comms
	opModel   bool  // a host operator with a performance model (gpu.OpClass)
}

func (b *builder) init(t *Trace) {
	b.t = t
	b.str = t.Str
	b.s = t.Slices
	b.kindByCat = map[int32]int32{}
	b.names = map[int32]nameInfo{}
	b.kinds = map[string]int32{}
	b.raw = make(map[string]int32, 1024)
	b.colls = map[string]int32{}
	b.shapes = map[string]int32{}
	b.opMemo = map[string]costMemo{}
	b.strTIDs = map[string]int64{}
	b.cpuSteps = map[int32]*trace.Span{}
	b.gpuSteps = map[int32]*trace.Span{}
	b.counts = map[int32]int{}
	for _, k := range []string{stream.KindKernel, stream.KindComm, stream.KindMemcpy, stream.KindMemset,
		stream.KindRuntime, stream.KindDriver, stream.KindCPUOp, stream.KindPython, stream.KindAnnotation,
		stream.KindGPUAnnotation, stream.KindSync, stream.KindOther} {
		b.kinds[k] = b.str.ID(k)
	}
	for i, m := range []string{"memory_allocated_bytes", "memory_reserved_bytes", "cpu_memory_allocated_bytes", "cpu_memory_reserved_bytes"} {
		b.memMetrics[i] = b.str.ID(m)
	}
}

// kindForCat maps a Kineto category to a slice kind; kernels are refined
// by name later.
func kindForCat(cat string) string {
	switch strings.ToLower(cat) {
	case "kernel":
		return stream.KindKernel
	case "gpu_memcpy", "memcpy":
		return stream.KindMemcpy
	case "gpu_memset", "memset":
		return stream.KindMemset
	case "cuda_runtime", "runtime", "mtia_runtime", "cuda_profiler_range":
		return stream.KindRuntime
	case "cuda_driver":
		return stream.KindDriver
	case "cpu_op", "operator":
		return stream.KindCPUOp
	case "python_function":
		return stream.KindPython
	case "user_annotation":
		return stream.KindAnnotation
	case "gpu_user_annotation":
		return stream.KindGPUAnnotation
	case "cuda_sync":
		return stream.KindSync
	}
	return stream.KindOther
}

// intern returns the string id of a raw JSON string body, decoding escapes
// the first time a spelling is seen.
func (b *builder) intern(raw []byte) int32 {
	if id, ok := b.raw[string(raw)]; ok {
		return id
	}
	if len(raw) > MaxNameBytes {
		// every table, report and dashboard row would carry it whole; cut
		// it before copying it (and leave it out of the cache)
		if b.longNames == 0 {
			b.longNamesAt = b.at
		}
		b.longNames++
		return b.str.ID(b.text(raw[:cutAt(raw, MaxNameBytes)]) + fmt.Sprintf("…[%d more bytes cut]", len(raw)-cutAt(raw, MaxNameBytes)))
	}
	id := b.str.ID(b.text(raw))
	b.raw[string(raw)] = id
	return id
}

// text decodes a raw JSON string body into valid UTF-8.
func (b *builder) text(raw []byte) string {
	if bytes.IndexByte(raw, '\\') >= 0 {
		return jsonscan.Unescape(raw) // replaces invalid UTF-8 itself
	}
	if !utf8.Valid(raw) {
		// profilers copy C++ names byte for byte; DuckDB stores UTF-8 only
		if b.badText == 0 {
			b.badTextAt = b.at
		}
		b.badText++
		return strings.ToValidUTF8(string(raw), "\uFFFD")
	}
	return string(raw)
}

// cutAt is where to cut b to at most n bytes without splitting a UTF-8
// sequence or a JSON escape.
func cutAt(b []byte, n int) int {
	if len(b) <= n {
		return len(b)
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	// back off over a dangling escape: \ followed by fewer than its bytes
	if i := bytes.LastIndexByte(b[:n], '\\'); i >= 0 && n-i <= 6 {
		n = i
	}
	return n
}

func (b *builder) nameInfo(id int32, kind string) nameInfo {
	if ni, ok := b.names[id]; ok {
		return ni
	}
	name := b.str.Get(id)
	ni := nameInfo{stepNo: -1}
	if n, ok := strings.CutPrefix(name, "ProfilerStep#"); ok {
		if v, err := strconv.Atoi(strings.TrimSpace(n)); err == nil {
			ni.stepNo = int32(v)
		}
	}
	ni.recParams = name == "record_param_comms"
	if kind == stream.KindCPUOp {
		ni.opModel = gpu.OpClass(name) != ""
	}
	if kind == stream.KindCPUOp || kind == stream.KindAnnotation {
		// c10d's operators and NCCL's record_function ranges name the
		// collective the job called: c10d::alltoall_, nccl:all_to_all
		for _, p := range []string{"c10d::", "nccl:"} {
			if rest, ok := strings.CutPrefix(name, p); ok {
				ni.coll = b.optID(gpu.NormalizeCollective(rest))
			}
		}
	}
	if kind == stream.KindKernel && gpu.IsCollectiveKernel(name) {
		ni.comm = true
		c := gpu.ParseCollectiveKernel(name)
		ni.coll = b.optID(c.Name)
		ni.algo = b.optID(c.Algo)
		ni.proto = b.optID(c.Protocol)
	}
	if kind == stream.KindMemcpy || kind == stream.KindMemset {
		c := gpu.ParseCopy(name)
		ni.copyKind = b.optID(c.Kind)
		ni.hostMem = b.optID(c.HostMem)
	}
	b.names[id] = ni
	return ni
}

func (b *builder) optID(s string) int32 {
	if s == "" {
		return 0
	}
	return b.str.ID(s)
}

func (b *builder) tid(e *event) int64 {
	if e.tidStr == nil || e.tid != -1 {
		return e.tid
	}
	if v, ok := b.strTIDs[string(e.tidStr)]; ok {
		return v
	}
	v := -1000 - int64(len(b.strTIDs))
	b.strTIDs[string(e.tidStr)] = v
	b.t.ThreadNames[v] = jsonscan.Text(e.tidStr)
	return v
}

// commit stores one parsed event. off is its end offset, for errors.
func (b *builder) commit(e *event, off int64) {
	b.at = off
	if b.again != nil {
		switch e.ph {
		case 'X', 'B', 'E', 'C', 'i', 'I':
		default:
			return // the second pass of a two-pass read wants the rows and counters alone
		}
	}
	if b.flowsOnly {
		if e.ph == 's' || e.ph == 'f' || e.ph == 't' {
			b.flow(e)
		}
		return
	}
	b.nEvents++
	b.phCounts[e.ph]++
	switch e.ph {
	case 'X':
		b.slice(e, e.ts, e.dur)
	case 'B':
		key := [2]int64{e.pid, b.tid(e)}
		b.open[key] = append(b.lazyOpen()[key], pending{name: b.intern(e.name), cat: b.intern(e.cat), ts: e.ts})
	case 'E':
		key := [2]int64{e.pid, b.tid(e)}
		st := b.lazyOpen()[key]
		if len(st) == 0 {
			return
		}
		top := st[len(st)-1]
		b.open[key] = st[:len(st)-1]
		// the B event's name and cat are already interned (unescaped):
		// pass their ids, not their text, which intern would re-decode
		b.sliceIDs(e, top.cat, top.name, top.ts, e.ts-top.ts)
	case 'i', 'I':
		b.instant(e)
	case 'C':
		for k := range e.nCounters {
			name := jsonscan.Text(e.name)
			if !bytes.Equal(e.counterNames[k], []byte("value")) || e.nCounters > 1 {
				name += "." + jsonscan.Text(e.counterNames[k])
			}
			b.counter(-1, e.ts, b.str.ID(name), e.counterVals[k])
		}
	case 's', 'f', 't':
		if b.slim {
			// kept only if some row lacks a correlation id, which the
			// first pass knows at its end: readFlows then reads them
			b.flowsSkipped = true
			return
		}
		b.flow(e)
	case 'M':
		b.metadata(e)
	}
}

// flow keeps an ac2g flow event, which bindFlows may need.
func (b *builder) flow(e *event) {
	if cat := e.cat; bytes.Equal(cat, []byte("ac2g")) || bytes.Equal(cat, []byte("async_cpu_to_gpu")) {
		if e.hasID {
			b.flows = append(b.flows, flow{id: e.id, pid: e.pid, tid: b.tid(e), ts: e.ts, ph: e.ph})
		}
	}
}

func (b *builder) lazyOpen() map[[2]int64][]pending {
	if b.open == nil {
		b.open = map[[2]int64][]pending{}
	}
	return b.open
}

func (b *builder) metadata(e *event) {
	if e.args.has&aName == 0 {
		return
	}
	switch string(e.name) {
	case "thread_name":
		b.t.ThreadNames[b.tid(e)] = jsonscan.Text(e.args.name)
	case "process_name":
		b.t.ProcessNames[e.pid] = jsonscan.Text(e.args.name)
	}
}

func (b *builder) slice(e *event, ts, dur int64) {
	b.sliceIDs(e, b.intern(e.cat), b.intern(e.name), ts, dur)
}

func (b *builder) sliceIDs(e *event, catID, nameID int32, ts, dur int64) {
	s := b.s
	first := b.again == nil // the first (or only) pass: what finish needs
	if dur < 0 {
		// Kineto's clock skew: an 'X' event's dur, or an 'E' before its
		// 'B', below zero by a little. Kept, at 0 (also for the step
		// ranges below), and counted for a note: a reader that drops or
		// refuses them loses real events, one that keeps them silently
		// hides a broken trace.
		if first {
			if b.negDur == 0 {
				b.negDurAt = b.at
			}
			b.negDur++
		}
		dur = 0
	}
	kindID, ok := b.kindByCat[catID]
	if !ok {
		kindID = b.kinds[kindForCat(b.str.Get(catID))]
		b.kindByCat[catID] = kindID
	}
	kind := b.str.Get(kindID)
	ni := nameInfo{stepNo: -1}
	switch kind {
	case stream.KindKernel, stream.KindMemcpy, stream.KindMemset, stream.KindAnnotation, stream.KindGPUAnnotation, stream.KindCPUOp:
		ni = b.nameInfo(nameID, kind)
		if ni.comm {
			kindID = b.kinds[stream.KindComm]
			kind = stream.KindComm
		}
	}
	if first {
		b.counts[kindID]++
	}
	a := &e.args
	if n := len(s.TS.V); n == cap(s.TS.V) && n >= minProjectRows && first {
		b.reserve(b.projectRows(n))
	}
	s.Kind.Append(kindID)
	if !b.slim {
		s.Cat.Append(catID)
	}
	s.Name.Append(nameID)
	s.TS.Append(ts)
	s.Dur.Append(dur)
	s.AppendThread(e.pid, b.tid(e))
	gpuSide := kind == stream.KindKernel || kind == stream.KindComm || kind == stream.KindMemcpy || kind == stream.KindMemset
	row := s.Len() - 1
	if b.slim {
		b.slimDevice(a, e, gpuSide || kind == stream.KindGPUAnnotation)
	} else {
		b.wideColumns(a, e, gpuSide || kind == stream.KindGPUAnnotation, row)
	}
	s.Correlation.AppendOpt(a.correlation, a.has&aCorrelation != 0)
	if first && a.has&aCorrelation == 0 && (gpuSide || kind == stream.KindRuntime || kind == stream.KindDriver) {
		b.uncorrelated++
	}
	coll := ni.coll
	if a.has&aCollName != 0 && len(a.collName) > 0 {
		coll = b.collective(a.collName)
	}
	if coll != 0 {
		s.CollName.Set(row, coll)
	}
	if a.has&aExternalID != 0 && first {
		b.noteCollective(a, e, coll, gpuSide, kind == stream.KindComm, row)
	}
	if a.has&aInElems != 0 {
		s.CollInElems.Set(row, a.inElems)
	}
	if a.has&aOutElems != 0 {
		s.CollOutElems.Set(row, a.outElems)
	}
	if a.has&aGroupSize != 0 {
		s.CollGroupSize.Set(row, int32(a.groupSize))
	}
	b.optDict(&s.CollDtype, row, a.dtype, a.has&aDtype != 0)
	if !b.slim {
		b.detailColumns(a, ni, row)
	}
	modelled := false
	if ni.opModel && a.has&aInputDims != 0 {
		if b.again != nil {
			modelled = b.again.modelled(b.again.off + row)
		} else {
			modelled = b.opCost(row, nameID, a)
		}
	}
	if !b.slim && (gpuSide || coll != 0 || ni.copyKind != 0 || a.has&detailArgs != 0 || modelled) {
		s.MarkDetail(row)
	}
	if first && ni.stepNo >= 0 {
		steps := b.cpuSteps
		if kind == stream.KindGPUAnnotation {
			steps = b.gpuSteps
		}
		if sp, ok := steps[ni.stepNo]; ok {
			sp.Start = min(sp.Start, ts)
			sp.End = max(sp.End, ts+dur)
		} else {
			steps[ni.stepNo] = &trace.Span{Start: ts, End: ts + dur}
		}
	}
	if b.again != nil && s.Len() == b.again.chunkRows {
		if err := b.again.flush(b); err != nil {
			panic(err) // ends the read: the scanner's Run returns it
		}
	}
}

// wideColumns appends the columns the first pass of a two-pass read leaves
// out: finish does not read them.
func (b *builder) wideColumns(a *eventArgs, e *event, onGPU bool, row int) {
	s := b.s
	switch {
	case a.has&aDevice != 0:
		s.Device.Append(int32(a.device))
	case onGPU:
		s.Device.Append(int32(e.pid))
	default:
		s.Device.AppendNull()
	}
	switch {
	case a.has&aStream != 0:
		s.Stream.Append(a.stream)
	case onGPU:
		s.Stream.Append(b.tid(e))
	default:
		s.Stream.AppendNull()
	}
	s.ExternalID.AppendOpt(a.externalID, a.has&aExternalID != 0)
}

// detailColumns sets the detail columns finish neither reads nor writes.
func (b *builder) detailColumns(a *eventArgs, ni nameInfo, row int) {
	s := b.s
	if a.has&aGrid != 0 {
		s.GridX.Set(row, int32(a.grid[0]))
		s.GridY.Set(row, int32(a.grid[1]))
		s.GridZ.Set(row, int32(a.grid[2]))
	}
	if a.has&aBlock != 0 {
		s.BlockX.Set(row, int32(a.block[0]))
		s.BlockY.Set(row, int32(a.block[1]))
		s.BlockZ.Set(row, int32(a.block[2]))
	}
	if a.has&aRegisters != 0 {
		s.Registers.Set(row, int32(a.registers))
	}
	if a.has&aSharedMem != 0 {
		s.SharedMem.Set(row, a.sharedMem)
	}
	if a.has&aOccupancy != 0 {
		s.Occupancy.Set(row, a.occupancy)
	}
	if a.has&aBytes != 0 {
		s.Bytes.Set(row, a.bytes)
	}
	if ni.copyKind != 0 {
		s.CopyKind.Set(row, ni.copyKind)
	}
	if ni.hostMem != 0 {
		s.HostMem.Set(row, ni.hostMem)
	}
	b.optDict(&s.PGName, row, a.pgName, a.has&aPGName != 0)
	b.optDict(&s.PGDesc, row, a.pgDesc, a.has&aPGDesc != 0)
	b.optDict(&s.PGRanks, row, a.pgRanks, a.has&aPGRanks != 0)
	if ni.algo != 0 {
		s.CollAlgo.Set(row, ni.algo)
	}
	if ni.proto != 0 {
		s.CollProto.Set(row, ni.proto)
	}
}

func (b *builder) optDict(col *stream.SparseDict, row int, raw []byte, ok bool) {
	if ok && raw != nil {
		col.Set(row, b.intern(raw))
	}
}

// collective normalises a "Collective name" argument, once per spelling.
func (b *builder) collective(raw []byte) int32 {
	if id, ok := b.colls[string(raw)]; ok {
		return id
	}
	id := b.str.ID(gpu.NormalizeCollective(string(raw)))
	b.colls[string(raw)] = id
	return id
}
