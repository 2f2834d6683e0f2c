package kineto

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/stream"
)

func TestReadBasicTrace(t *testing.T) {
	tr := mustRead(t, "trace.json", basicTrace)
	s := tr.Slices

	if tr.Format != FormatChrome || tr.Path != "trace.json" {
		t.Errorf("Format, Path = %q, %q", tr.Format, tr.Path)
	}
	if !tr.Complete {
		t.Error("Record Window End not seen")
	}
	if tr.TraceName != "/tmp/run/trace.json" || tr.DisplayTimeUnit != "ms" {
		t.Errorf("TraceName, DisplayTimeUnit = %q, %q", tr.TraceName, tr.DisplayTimeUnit)
	}
	if tr.Rank != 0 || tr.RankSource != "default" {
		t.Errorf("Rank = %d (%s)", tr.Rank, tr.RankSource)
	}
	if len(tr.Devices) != 2 || tr.Devices[0].TotalGlobalMem != 85000000000 || tr.Devices[1].NumSMs != 132 {
		t.Errorf("Devices = %+v", tr.Devices)
	}
	if got := tr.GPUName(); got != "NVIDIA H100" {
		t.Errorf("GPUName = %q; want the device the kernels ran on", got)
	}
	wantCounts := map[string]int{
		"events": 19, "X": 7, "B": 2, "E": 3, "i": 2, "C": 1, "M": 2, "s": 1, "f": 1, "steps": 2,
		"kind:annotation": 4, "kind:cpu_op": 3, "kind:runtime": 1, "kind:kernel": 1,
	}
	if !reflect.DeepEqual(tr.Counts, wantCounts) {
		t.Errorf("Counts = %v\nwant %v", tr.Counts, wantCounts)
	}
	if s.Len() != 9 {
		t.Fatalf("%d slices; want 9", s.Len())
	}
	if got, want := steps(tr), [][3]int64{{1, 1000000, 2000000}, {2, 2000000, 3000000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("steps = %v; want %v", got, want)
	}

	type rowWant struct {
		name, kind     string
		ts, dur        int64
		pid, tid       int64
		device, stream any
		corr, ext      any
		step, launchTS any
	}
	for _, w := range []rowWant{
		{"ProfilerStep#1", "annotation", 1000000, 1000000, 100, 7, nil, nil, nil, nil, int32(1), nil},
		{"ProfilerStep#2", "annotation", 2000000, 1000000, 100, 7, nil, nil, nil, nil, int32(2), nil},
		{"aten::mm", "cpu_op", 1100500, 200250, 100, 7, nil, nil, nil, int64(11), int32(1), nil},
		{"cudaLaunchKernel", "runtime", 1500000, 10000, 100, 7, nil, nil, int64(77), int64(11), int32(1), nil},
		// launched in step 1, runs inside step 2's range: it still belongs to step 1
		{"sgemm_128x64", "kernel", 2500000, 300001, 1, 7, int32(1), int64(7), int64(77), int64(11), int32(1), int64(1500000)},
		{"aten::add", "cpu_op", 2100000, 5000, 100, 7, nil, nil, nil, nil, int32(2), nil},
		{"outside", "cpu_op", 5000000, 5000, 100, 7, nil, nil, nil, nil, nil, nil},
		{"outer", "annotation", 3000000, 100000, 100, 8, nil, nil, nil, nil, nil, nil},
		{"inner", "annotation", 3010000, 10500, 100, 8, nil, nil, nil, nil, nil, nil},
	} {
		r := row(t, tr, w.name)
		got := rowWant{nameOf(tr, r), kindOf(tr, r), s.TS.V[r], s.Dur.V[r], s.PID.V[r], s.TID.V[r],
			numAt(&s.Device, r), numAt(&s.Stream, r), numAt(&s.Correlation, r), numAt(&s.ExternalID, r),
			numAt(&s.Step, r), numAt(&s.LaunchTS, r)}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("row %s:\n got  %+v\n want %+v", w.name, got, w)
		}
		if cat := tr.Str.Get(s.Cat.V[r]); w.kind == "annotation" && cat != "user_annotation" {
			t.Errorf("row %s: cat %q", w.name, cat)
		}
	}

	k := row(t, tr, "sgemm_128x64")
	for _, c := range []struct {
		col  *stream.Sparse[int32]
		want int32
	}{{&s.GridX, 4}, {&s.GridY, 2}, {&s.GridZ, 1}, {&s.BlockX, 128}, {&s.BlockY, 1}, {&s.BlockZ, 1}, {&s.Registers, 64}} {
		if v, ok := sparseAt(c.col, k); !ok || v != c.want {
			t.Errorf("kernel launch config column = %d, %v; want %d", v, ok, c.want)
		}
	}
	if v, ok := sparseAt(&s.SharedMem, k); !ok || v != 16384 {
		t.Errorf("shared memory = %d, %v", v, ok)
	}
	if v, ok := sparseAt(&s.Occupancy, k); !ok || v != 37.5 {
		t.Errorf("occupancy = %v, %v", v, ok)
	}
	if len(s.GridX.Rows) != 1 || len(s.Occupancy.Rows) != 1 {
		t.Errorf("kernel columns set on %d/%d rows; want only the kernel", len(s.GridX.Rows), len(s.Occupancy.Rows))
	}

	if tr.ThreadNames[7] != "thread 7 (python3)" || tr.ProcessNames[100] != "python3" {
		t.Errorf("ThreadNames = %v, ProcessNames = %v", tr.ThreadNames, tr.ProcessNames)
	}
	if got, want := counters(tr), []counterRow{{"queue", nil, 1200000, 3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("counters = %+v; want %+v", got, want)
	}
	// the span covers duration events only
	if tr.StartNS != 1000000 || tr.EndNS != 5005000 {
		t.Errorf("span = [%d, %d]", tr.StartNS, tr.EndNS)
	}
	if tr.JSONBytes != int64(len(basicTrace)) {
		t.Errorf("JSONBytes = %d; want %d", tr.JSONBytes, len(basicTrace))
	}
}

func TestReadTimestampForms(t *testing.T) {
	doc := `{"traceEvents":[
	  {"ph":"X","cat":"cpu_op","name":"str","pid":1,"tid":1,"ts":"1712195495406752.8","dur":"1.5"},
	  {"ph":"X","cat":"cpu_op","name":"epoch","pid":1,"tid":1,"ts":1666149715033200,"dur":2},
	  {"ph":"X","cat":"cpu_op","name":"frac","pid":1,"tid":1,"ts":1666149715033200.125,"dur":0.0005},
	  {"ph":"X","cat":"cpu_op","name":"exp","pid":1,"tid":1,"ts":1.6661497150332e15,"dur":1e1},
	  {"ph":"X","cat":"cpu_op","name":"neg","pid":1,"tid":1,"ts":1666149715033201,"dur":-4},
	  {"ph":"X","cat":"cpu_op","name":"bigint","pid":1,"tid":1,"ts":1666149715033202,"dur":1,
	   "args":{"External id":10159970886766084423,"correlation":"0x0","Comms Id":10159970886766084423}}
	],"displayTimeUnit":"ns"}`
	tr := mustRead(t, "t.json", doc)
	s := tr.Slices
	for _, w := range []struct {
		name    string
		ts, dur int64
	}{
		{"str", 1712195495406752800, 1500},
		{"epoch", 1666149715033200000, 2000},
		{"frac", 1666149715033200125, 1},
		{"exp", 1666149715033200000, 10000},
		{"neg", 1666149715033201000, 0}, // a negative duration is stored as 0
		{"bigint", 1666149715033202000, 1000},
	} {
		r := row(t, tr, w.name)
		if s.TS.V[r] != w.ts || s.Dur.V[r] != w.dur {
			t.Errorf("%s: ts, dur = %d, %d; want %d, %d", w.name, s.TS.V[r], s.Dur.V[r], w.ts, w.dur)
		}
	}
	r := row(t, tr, "bigint")
	if got := numAt(&s.ExternalID, r); got != int64(math.MaxInt64) {
		t.Errorf("External id > 2^63 = %v; want saturated", got)
	}
	if got := numAt(&s.Correlation, r); got != int64(0) {
		t.Errorf(`correlation "0x0" = %v; want 0`, got)
	}
	// displayTimeUnit does not change the unit of ts
	if tr.DisplayTimeUnit != "ns" {
		t.Errorf("DisplayTimeUnit = %q", tr.DisplayTimeUnit)
	}
}

func TestReadBaseTime(t *testing.T) {
	events := `"traceEvents":[
	  {"ph":"X","cat":"user_annotation","name":"ProfilerStep#0","pid":1,"tid":1,"ts":0,"dur":100},
	  {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":10.5,"dur":1},
	  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":1,"args":{"correlation":5}},
	  {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":150,"dur":1,"args":{"correlation":5}},
	  {"ph":"i","s":"t","name":"[memory]","pid":1,"tid":1,"ts":30,"args":{"Total Allocated":5,"Device Id":0,"Device Type":1}}
	]`
	const base = int64(1767189312000000000)
	after := mustRead(t, "t.json", `{`+events+`,"baseTimeNanoseconds":1767189312000000000}`)
	before := mustRead(t, "t.json", `{"baseTimeNanoseconds":1767189312000000000,`+events+`}`)
	sameTrace(t, "baseTimeNanoseconds before vs after traceEvents", before, after)

	tr := after
	if !tr.HasBaseTime || tr.BaseTimeNS != base {
		t.Fatalf("base = %d, %v", tr.BaseTimeNS, tr.HasBaseTime)
	}
	s := tr.Slices
	if got := s.TS.V[row(t, tr, "a")]; got != base+10500 {
		t.Errorf("ts = %d; want base + 10500", got)
	}
	if got, want := steps(tr), [][3]int64{{0, base, base + 100000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("steps = %v; want %v", got, want)
	}
	k := row(t, tr, "k")
	if numAt(&s.Step, k) != int32(0) || numAt(&s.LaunchTS, k) != base+20000 {
		t.Errorf("kernel step, launch = %v, %v", numAt(&s.Step, k), numAt(&s.LaunchTS, k))
	}
	if c := counters(tr); len(c) != 1 || c[0].TS != base+30000 {
		t.Errorf("counters = %+v", c)
	}
	if tr.StartNS != base || tr.EndNS != base+151000 {
		t.Errorf("span = [%d, %d]", tr.StartNS, tr.EndNS)
	}

	// without a base the timestamps stay relative
	plain := mustRead(t, "t.json", `{`+events+`}`)
	if plain.HasBaseTime || plain.Slices.TS.V[row(t, plain, "a")] != 10500 {
		t.Errorf("without base: ts = %d", plain.Slices.TS.V[row(t, plain, "a")])
	}
}

func TestReadDistributedInfo(t *testing.T) {
	doc := `{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1}],
	  "distributedInfo": {"backend":"nccl","rank":3,"world_size":8,"pg_count":2,
	    "pg_config":[{"pg_name":"0","pg_desc":"default_pg","backend_config":"cuda:nccl","pg_size":8,"ranks":[0,1,2,3,4,5,6,7]},
	                 {"pg_name":1,"pg_desc":"tp \"group\"","pg_size":2,"ranks":[2,3]}],
	    "nccl_version":"2.21.5"}}`
	// distributedInfo wins over the file name, and comes after traceEvents
	tr := mustRead(t, "rank-0.Apr_03.pt.trace.json", doc)
	if tr.Rank != 3 || tr.RankSource != "distributedInfo" {
		t.Errorf("Rank = %d (%s)", tr.Rank, tr.RankSource)
	}
	d := tr.Dist
	if d.Backend != "nccl" || d.WorldSize != 8 || d.PGCount != 2 || d.NCCLVersion != "2.21.5" || len(d.PGConfig) != 2 {
		t.Fatalf("Dist = %+v", d)
	}
	if g := d.PGConfig[0]; g.Name != "0" || g.Desc != "default_pg" || g.BackendConfig != "cuda:nccl" || g.Size != 8 || len(g.Ranks) != 8 {
		t.Errorf("pg 0 = %+v", g)
	}
	if g := d.PGConfig[1]; g.Name != "1" || g.Desc != `tp "group"` || !reflect.DeepEqual(g.Ranks, []int{2, 3}) {
		t.Errorf("pg 1 = %+v", g)
	}

	// old form, without rank: the file name decides
	tr = mustRead(t, "rank-5.json", `{"distributedInfo":{"backend":"nccl","world_size":128},"traceEvents":[]}`)
	if tr.Rank != 5 || tr.RankSource != "file name" || tr.Dist.Rank != nil || tr.Dist.WorldSize != 128 {
		t.Errorf("Rank = %d (%s), Dist = %+v", tr.Rank, tr.RankSource, tr.Dist)
	}
}

func TestRankFromName(t *testing.T) {
	tests := []struct {
		name string
		rank int
		ok   bool
	}{
		{"rank-3.Apr_03_18_51_38.1102.pt.trace.json.gz", 3, true},
		{"/data/run/rank-12.json", 12, true},
		{"worker_5.1694128201557.pt.trace.json", 5, true},
		{"worker3_step_12.1694128201557.pt.trace.json", 3, true},
		{"train_overall_rank0_dp0_tp0_pp0.1712.pt.trace.json.gz", 0, true},
		{"sampled_rank-1.json.gz", 1, true},
		{"RANK7.json", 7, true},
		{"rank-9/trace.json", 0, false}, // only the base name counts
		{"myrank3.json", 0, false},
		{"trace.json", 0, false},
		{"rank-99999999999999999999.json", 0, false},
	}
	for _, tc := range tests {
		r, ok := RankFromName(tc.name)
		if ok != tc.ok || (ok && r != tc.rank) {
			t.Errorf("RankFromName(%q) = %d, %v; want %d, %v", tc.name, r, ok, tc.rank, tc.ok)
		}
	}

	doc := `{"traceEvents":[]}`
	for _, tc := range []struct {
		name   string
		opt    int
		rank   int32
		source string
	}{
		{"rank-3.Apr_03.pt.trace.json", -1, 3, "file name"},
		{"worker_5.123.pt.trace.json", 7, 5, "file name"},
		{"trace.json", 7, 7, "flag"},
		{"trace.json", -1, 0, "default"},
	} {
		tr, err := Read(strings.NewReader(doc), tc.name, Options{Rank: tc.opt})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Rank != tc.rank || tr.RankSource != tc.source {
			t.Errorf("%s with Rank %d: rank %d (%s); want %d (%s)", tc.name, tc.opt, tr.Rank, tr.RankSource, tc.rank, tc.source)
		}
	}
}

func TestReadFlows(t *testing.T) {
	for _, cat := range []string{"ac2g", "async_cpu_to_gpu"} {
		doc := strings.ReplaceAll(`{"traceEvents":[
		  {"ph":"X","cat":"user_annotation","name":"ProfilerStep#5","pid":1,"tid":1,"ts":0,"dur":100},
		  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":2},
		  {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":150,"dur":20},
		  {"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":200,"dur":20},
		  {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoD (Device -> Device)","pid":0,"tid":7,"ts":300,"dur":1},
		  {"ph":"s","cat":"CAT","name":"CAT","id":42,"pid":1,"tid":1,"ts":10},
		  {"ph":"f","cat":"CAT","name":"CAT","id":42,"pid":0,"tid":7,"ts":150,"bp":"e"},
		  {"ph":"f","cat":"CAT","name":"CAT","id":"43","pid":0,"tid":7,"ts":300,"bp":"e"},
		  {"ph":"s","cat":"fwdbwd","id":44,"pid":0,"tid":7,"ts":200},
		  {"ph":"f","cat":"fwdbwd","id":44,"pid":0,"tid":7,"ts":200,"bp":"e"},
		  {"ph":"f","cat":"CAT","pid":0,"tid":7,"ts":200,"bp":"e"}
		]}`, "CAT", cat)
		tr := mustRead(t, "t.json", doc)
		s := tr.Slices
		rt, k, k2, cp := row(t, tr, "cudaLaunchKernel"), row(t, tr, "k"), row(t, tr, "k2"), row(t, tr, "Memcpy DtoD (Device -> Device)")
		if numAt(&s.Correlation, rt) != int64(42) || numAt(&s.Correlation, k) != int64(42) {
			t.Errorf("%s: correlation runtime %v, kernel %v; want 42 from the flow", cat, numAt(&s.Correlation, rt), numAt(&s.Correlation, k))
		}
		if numAt(&s.Step, k) != int32(5) || numAt(&s.LaunchTS, k) != int64(10000) {
			t.Errorf("%s: kernel step %v launch %v; want 5, 10000", cat, numAt(&s.Step, k), numAt(&s.LaunchTS, k))
		}
		// fwdbwd flows and flows without an id bind nothing
		if numAt(&s.Correlation, k2) != nil || numAt(&s.Step, k2) != nil {
			t.Errorf("%s: k2 correlation %v step %v; want null", cat, numAt(&s.Correlation, k2), numAt(&s.Step, k2))
		}
		// an id given as a string works; with no launch there is no step
		if numAt(&s.Correlation, cp) != int64(43) || numAt(&s.Step, cp) != nil {
			t.Errorf("%s: memcpy correlation %v step %v", cat, numAt(&s.Correlation, cp), numAt(&s.Step, cp))
		}
		if tr.Counts["s"] != 2 || tr.Counts["f"] != 4 {
			t.Errorf("%s: counts %v", cat, tr.Counts)
		}
	}

	// a correlation already present is never overwritten by a flow
	tr := mustRead(t, "t.json", `{"traceEvents":[
	  {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":150,"dur":20,"args":{"correlation":9}},
	  {"ph":"f","cat":"ac2g","id":42,"pid":0,"tid":7,"ts":150,"bp":"e"}]}`)
	if got := numAt(&tr.Slices.Correlation, 0); got != int64(9) {
		t.Errorf("correlation = %v; want 9", got)
	}
}

func TestReadCollectives(t *testing.T) {
	doc := `{"traceEvents":[
	  {"ph":"X","cat":"kernel","name":"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)","pid":0,"tid":20,"ts":10,"dur":50,
	   "args":{"device":0,"stream":20,"correlation":5,"External id":6,"Collective name":"_allgather_base","In msg nelems":1024,
	           "Out msg nelems":2048,"Group size":2,"dtype":"BFloat16","In split size":"[]","Out split size":"[]",
	           "Process Group Name":"0","Process Group Description":"default_pg","Process Group Ranks":"[0, 1]"}},
	  {"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_TREE_LL128_Sum_float(ncclWorkElem)","pid":0,"tid":20,"ts":100,"dur":50,
	   "args":{"Process Group Ranks":[0,1],"Collective name":42}},
	  {"ph":"X","cat":"kernel","name":"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)","pid":2,"tid":4,"ts":200,"dur":5,
	   "args":{"device":2,"stream":4,"correlation":9,"kind":"Dispatch Kernel"}},
	  {"ph":"X","cat":"kernel","name":"void at::vectorized_elementwise_kernel<4>","pid":0,"tid":7,"ts":300,"dur":5},
	  {"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":9,"tid":9,"ts":5,"dur":1,
	   "args":{"Collective name":"all_reduce","dtype":"Float","In msg nelems":8,"Group size":4}}
	]}`
	tr := mustRead(t, "t.json", doc)
	s := tr.Slices
	type collWant struct {
		kind, coll, algo, proto, dtype, pgName, pgDesc, pgRanks string
		in, out                                                 any
		group                                                   any
	}
	get := func(r int) collWant {
		w := collWant{kind: kindOf(tr, r), coll: dictAt(tr, &s.CollName, r), algo: dictAt(tr, &s.CollAlgo, r),
			proto: dictAt(tr, &s.CollProto, r), dtype: dictAt(tr, &s.CollDtype, r), pgName: dictAt(tr, &s.PGName, r),
			pgDesc: dictAt(tr, &s.PGDesc, r), pgRanks: dictAt(tr, &s.PGRanks, r)}
		if v, ok := sparseAt(&s.CollInElems, r); ok {
			w.in = v
		}
		if v, ok := sparseAt(&s.CollOutElems, r); ok {
			w.out = v
		}
		if v, ok := sparseAt(&s.CollGroupSize, r); ok {
			w.group = v
		}
		return w
	}
	const null = "<null>"
	for r, want := range []collWant{
		{"comm", "allgather", "RING", "LL", "BFloat16", "0", "default_pg", "[0, 1]", int64(1024), int64(2048), int32(2)},
		// collective from the kernel name; a non-string Collective name is ignored; ranks as a JSON array
		{"comm", "allreduce", "TREE", "LL128", null, null, null, "[0,1]", nil, nil, nil},
		// RCCL's generic kernel says nothing about the collective
		{"comm", null, null, null, null, null, null, null, nil, nil, nil},
		{"kernel", null, null, null, null, null, null, null, nil, nil, nil},
		{"cpu_op", "allreduce", null, null, "Float", null, null, null, int64(8), nil, int32(4)},
	} {
		if got := get(r); !reflect.DeepEqual(got, want) {
			t.Errorf("row %d (%s):\n got  %+v\n want %+v", r, nameOf(tr, r), got, want)
		}
	}
	if tr.Counts["kind:comm"] != 3 || tr.Counts["kind:kernel"] != 1 || tr.Counts["kind:cpu_op"] != 1 {
		t.Errorf("counts = %v", tr.Counts)
	}
	if numAt(&s.Device, 2) != int32(2) || numAt(&s.Stream, 2) != int64(4) || numAt(&s.Correlation, 2) != int64(9) {
		t.Errorf("ROCm kernel device/stream/correlation = %v/%v/%v", numAt(&s.Device, 2), numAt(&s.Stream, 2), numAt(&s.Correlation, 2))
	}
	// without device/stream args, GPU rows take them from pid/tid
	if numAt(&s.Device, 3) != int32(0) || numAt(&s.Stream, 3) != int64(7) {
		t.Errorf("kernel without args: device %v stream %v", numAt(&s.Device, 3), numAt(&s.Stream, 3))
	}
}

func TestReadMemcpy(t *testing.T) {
	doc := `{"traceEvents":[
	  {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":7,"ts":1,"dur":2,
	   "args":{"device":0,"context":1,"stream":7,"correlation":3,"bytes":4096,"memory bandwidth (GB/s)":2.1}},
	  {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pageable)","pid":1,"tid":8,"ts":5,"dur":2,"args":{"bytes":8}},
	  {"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":9,"dur":1,"args":{"bytes":16}},
	  {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoD (Device -> Device)","pid":0,"tid":7,"ts":11,"dur":1}
	]}`
	tr := mustRead(t, "t.json", doc)
	s := tr.Slices
	for r, w := range []struct {
		kind, copyKind, hostMem string
		bytes                   any
		device                  int32
		stream                  int64
	}{
		{"memcpy", "HtoD", "pinned", int64(4096), 0, 7},
		{"memcpy", "DtoH", "pageable", int64(8), 1, 8},
		{"memset", "<null>", "<null>", int64(16), 0, 7},
		{"memcpy", "DtoD", "<null>", nil, 0, 7},
	} {
		var b any
		if v, ok := sparseAt(&s.Bytes, r); ok {
			b = v
		}
		if kindOf(tr, r) != w.kind || dictAt(tr, &s.CopyKind, r) != w.copyKind || dictAt(tr, &s.HostMem, r) != w.hostMem ||
			b != w.bytes || numAt(&s.Device, r) != w.device || numAt(&s.Stream, r) != w.stream {
			t.Errorf("row %d: kind %s copy %s host %s bytes %v device %v stream %v; want %+v", r, kindOf(tr, r),
				dictAt(tr, &s.CopyKind, r), dictAt(tr, &s.HostMem, r), b, numAt(&s.Device, r), numAt(&s.Stream, r), w)
		}
	}
	if tr.Counts["kind:memcpy"] != 3 || tr.Counts["kind:memset"] != 1 {
		t.Errorf("counts = %v", tr.Counts)
	}
}

func TestReadCounters(t *testing.T) {
	var many []string
	for i := range 20 {
		many = append(many, fmt.Sprintf(`"s%02d":%d`, i, i))
	}
	doc := `{"traceEvents":[
	  {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":5,
	   "args":{"Total Reserved":2097152,"Total Allocated":1024,"Bytes":512,"Addr":94023,"Device Id":0,"Device Type":1}},
	  {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":6,
	   "args":{"Total Reserved":0,"Total Allocated":64,"Bytes":-8,"Device Id":-1,"Device Type":0}},
	  {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":7,"args":{"Total Allocated":3,"Device Id":2}},
	  {"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":8,"args":{"Bytes":1}},
	  {"ph":"i","s":"g","name":"something else","pid":1,"tid":1,"ts":9,"args":{"Total Allocated":99}},
	  {"ph":"C","name":"gpu","pid":1,"ts":10,"args":{"util":50,"mem":-1.5,"label":"x","nested":{"a":1},"flag":true}},
	  {"ph":"C","name":"q","pid":1,"ts":11,"args":{"value":3}},
	  {"ph":"C","name":"esc\"aped","pid":1,"ts":12,"args":{"a\\b":1}},
	  {"ph":"C","name":"many","pid":1,"ts":13,"args":{` + strings.Join(many, ",") + `}},
	  {"ph":"C","name":"none","pid":1,"ts":14,"args":{}},
	  {"ph":"C","name":"noargs","pid":1,"ts":15},
	  {"name":"late","args":{"value":7},"pid":1,"ts":16,"ph":"C"}
	]}`
	tr := mustRead(t, "t.json", doc)
	want := []counterRow{
		{"memory_allocated_bytes", int32(0), 5000, 1024},
		{"memory_reserved_bytes", int32(0), 5000, 2097152},
		{"cpu_memory_allocated_bytes", nil, 6000, 64},
		{"cpu_memory_reserved_bytes", nil, 6000, 0},
		{"memory_allocated_bytes", int32(2), 7000, 3},
		{"gpu.util", nil, 10000, 50},
		{"gpu.mem", nil, 10000, -1.5},
		{"q", nil, 11000, 3},
		{`esc"aped.a\b`, nil, 12000, 1},
	}
	for i := range maxCounterSeries {
		want = append(want, counterRow{fmt.Sprintf("many.s%02d", i), nil, 13000, float64(i)})
	}
	// args before ph are still read as series
	want = append(want, counterRow{"late", nil, 16000, 7})
	if got := counters(tr); !reflect.DeepEqual(got, want) {
		t.Errorf("counters:\n got  %+v\n want %+v", got, want)
	}
	if tr.Slices.Len() != 0 || tr.Counts["i"] != 5 || tr.Counts["C"] != 7 || tr.Counts["events"] != 12 {
		t.Errorf("slices %d, counts %v", tr.Slices.Len(), tr.Counts)
	}
}

func TestReadStringIDs(t *testing.T) {
	doc := `{"traceEvents":[
	  {"ph":"X","cat":"Trace","name":"PyTorch Profiler (0)","pid":"Spans","tid":"PyTorch Profiler","ts":1,"dur":100},
	  {"ph":"X","cat":"Trace","name":"other span","pid":"Spans","tid":"PyTorch Profiler","ts":2,"dur":10},
	  {"ph":"X","cat":"cpu_op","name":"op","pid":"12","tid":" 34 ","ts":3,"dur":1},
	  {"ph":"X","cat":"cpu_op","name":"op2","pid":12,"tid":"Other \"thread\"","ts":4,"dur":1},
	  {"ph":"M","name":"thread_name","pid":12,"tid":"Named","args":{"name":"named \"thread\""}},
	  {"ph":"M","name":"process_name","pid":-1,"tid":0,"args":{"name":"Spans"}},
	  {"ph":"M","name":"thread_sort_index","pid":12,"tid":34,"args":{"sort_index":3}},
	  {"ph":"M","name":"thread_name","pid":12,"tid":35,"args":{}}
	]}`
	tr := mustRead(t, "t.json", doc)
	s := tr.Slices
	for r, w := range [][2]int64{{-1, -1000}, {-1, -1000}, {12, 34}, {12, -1001}} {
		if s.PID.V[r] != w[0] || s.TID.V[r] != w[1] {
			t.Errorf("row %d: pid, tid = %d, %d; want %d, %d", r, s.PID.V[r], s.TID.V[r], w[0], w[1])
		}
	}
	wantThreads := map[int64]string{-1000: "PyTorch Profiler", -1001: `Other "thread"`, -1002: `named "thread"`}
	if !reflect.DeepEqual(tr.ThreadNames, wantThreads) {
		t.Errorf("ThreadNames = %v; want %v", tr.ThreadNames, wantThreads)
	}
	if !reflect.DeepEqual(tr.ProcessNames, map[int64]string{-1: "Spans"}) {
		t.Errorf("ProcessNames = %v", tr.ProcessNames)
	}
	// "Trace" rows are kind other and do not count towards the span
	if kindOf(tr, 0) != "other" || tr.Counts["kind:other"] != 2 {
		t.Errorf("kind = %s, counts = %v", kindOf(tr, 0), tr.Counts)
	}
	if tr.StartNS != 3000 || tr.EndNS != 5000 {
		t.Errorf("span = [%d, %d]; want [3000, 5000]", tr.StartNS, tr.EndNS)
	}
}

func TestReadEscapedNames(t *testing.T) {
	doc := `{"traceEvents":[
	  {"ph":"X","cat":"cpu_op","name":"a\"b","pid":1,"tid":1,"ts":1,"dur":1},
	  {"ph":"X","cat":"cpu_op","name":"a\"b","pid":1,"tid":1,"ts":2,"dur":1},
	  {"ph":"X","cat":"cpu_op","name":"a\u0022b","pid":1,"tid":1,"ts":3,"dur":1},
	  {"ph":"X","cat":"cpu_op","name":"C:\\x\\n.py","pid":1,"tid":1,"ts":4,"dur":1},
	  {"ph":"X","cat":"cpu\u005fop","name":"tab\there \u00e9","pid":1,"tid":1,"ts":5,"dur":1},
	  {"ph":"B","cat":"user_annotation","name":"x\\n \"q\" \\u0041","pid":1,"tid":2,"ts":10},
	  {"ph":"E","pid":1,"tid":2,"ts":11},
	  {"ph":"X","cat":"user_annotation","name":"plain","pid":1,"tid":2,"ts":12,"dur":1}
	],"traceName":"C:\\runs\\trace.json"}`
	tr := mustRead(t, "t.json", doc)
	s := tr.Slices
	want := []string{`a"b`, `a"b`, `a"b`, `C:\x\n.py`, "tab\there é", `x\n "q" \u0041`, "plain"}
	var got []string
	for r := range s.Len() {
		got = append(got, nameOf(tr, r))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("names:\n got  %q\n want %q", got, want)
	}
	if s.Name.V[0] != s.Name.V[1] || s.Name.V[0] != s.Name.V[2] {
		t.Errorf("spellings of a\"b got ids %v", s.Name.V[:3])
	}
	if kindOf(tr, 4) != "cpu_op" || s.Cat.V[4] != s.Cat.V[0] {
		t.Errorf("escaped cat: kind %s", kindOf(tr, 4))
	}
	if kindOf(tr, 5) != "annotation" || s.Dur.V[5] != 1000 {
		t.Errorf("B/E slice: kind %s dur %d", kindOf(tr, 5), s.Dur.V[5])
	}
	for id := range int32(tr.Str.Len()) {
		if str := tr.Str.Get(id); strings.Contains(str, `\"`) {
			t.Errorf("string table holds a raw spelling %q", str)
		}
	}
	if tr.TraceName != `C:\runs\trace.json` {
		t.Errorf("TraceName = %q", tr.TraceName)
	}
}

// The windows of finished reads are reused (jsonscan's pool): a trace
// keeps nothing of its window, so reading another file leaves its names,
// threads and metadata as they were.
func TestReadKeepsNothingOfTheWindow(t *testing.T) {
	doc := func(tag string) string {
		return `{"deviceProperties": [{"name": "` + tag + `-gpu"}], "traceEvents":[
	  {"ph":"X","cat":"cpu_op","name":"` + tag + `-op","pid":1,"tid":"` + tag + `-thread","ts":1,"dur":5,"args":{"Input Dims": [[2, 3]], "Input type": ["float"]}},
	  {"ph":"X","cat":"kernel","name":"` + tag + `-kernel","pid":0,"tid":7,"ts":2,"dur":1,"args":{"correlation": 1, "Collective name": "` + tag + `-coll"}},
	  {"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"` + tag + `-proc"}}
	]}`
	}
	first := mustRead(t, "a.json", doc("aaaa"))
	want := fmt.Sprint(first.Str.Len(), first.ThreadNames, first.ProcessNames, first.Devices)
	var names []string
	for i := range first.Str.Len() {
		names = append(names, first.Str.Get(int32(i)))
	}
	for range 3 {
		mustRead(t, "b.json", doc("bbbb"))
	}
	if got := fmt.Sprint(first.Str.Len(), first.ThreadNames, first.ProcessNames, first.Devices); got != want {
		t.Errorf("after other reads: %s, was %s", got, want)
	}
	for i, n := range names {
		if got := first.Str.Get(int32(i)); got != n || strings.Contains(got, "bbbb") {
			t.Errorf("string %d: %q, was %q", i, got, n)
		}
	}
}
