package kineto

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"github.com/trainscope/trainscope/ingest/jsonscan"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/trainscope/trainscope/stream"
)

// ---- helpers ---------------------------------------------------------------

func mustRead(t *testing.T, name, doc string) *Trace {
	t.Helper()
	tr, err := Read(strings.NewReader(doc), name, Options{Rank: -1})
	if err != nil {
		t.Fatalf("Read(%s): %v", name, err)
	}
	return tr
}

// readWindow reads plain JSON like Read does, but starting from a window of
// size bytes instead of 1 MiB, so that every unit straddles refills.
func readWindow(data []byte, name string, size int) (*Trace, error) {
	p := newParser(bytes.NewReader(data), name, Options{Rank: -1})
	p.s = jsonscan.NewStream(bytes.NewReader(data), size)
	if err := p.run(); err != nil {
		return nil, err
	}
	return p.trace, nil
}

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func nameOf(tr *Trace, row int) string { return tr.Str.Get(tr.Slices.Name.V[row]) }
func kindOf(tr *Trace, row int) string { return tr.Str.Get(tr.Slices.Kind.V[row]) }

// row returns the first slice row with the given name.
func row(t *testing.T, tr *Trace, name string) int {
	t.Helper()
	for i := range tr.Slices.Len() {
		if nameOf(tr, i) == name {
			return i
		}
	}
	t.Fatalf("no slice named %q", name)
	return -1
}

func sparseAt[T int32 | int64 | float64 | uint8](s *stream.Sparse[T], r int) (T, bool) {
	for i, x := range s.Rows {
		if int(x) == r {
			return s.Vals[i], true
		}
	}
	var zero T
	return zero, false
}

func dictAt(tr *Trace, s *stream.SparseDict, r int) string {
	id, ok := sparseAt(&s.Sparse, r)
	if !ok {
		return "<null>"
	}
	return tr.Str.Get(id)
}

func numAt[T int32 | int64 | float64 | uint8](c *stream.Num[T], r int) any {
	if !c.Valid(r) {
		return nil
	}
	return c.V[r]
}

type counterRow struct {
	Metric string
	Device any
	TS     int64
	Value  float64
}

func counters(tr *Trace) []counterRow {
	c := &tr.Counters
	var out []counterRow
	for i := range c.Len() {
		out = append(out, counterRow{tr.Str.Get(c.Metric.V[i]), numAt(&c.Device, i), c.TS.V[i], c.Value.V[i]})
	}
	return out
}

func steps(tr *Trace) [][3]int64 {
	var out [][3]int64
	for i := range tr.Steps.Len() {
		out = append(out, [3]int64{int64(tr.Steps.Step.V[i]), tr.Steps.Start.V[i], tr.Steps.End.V[i]})
	}
	return out
}

// sameTrace fails unless a and b hold the same tables and metadata.
func sameTrace(t *testing.T, what string, a, b *Trace) {
	t.Helper()
	check := func(field string, x, y any) {
		t.Helper()
		if !reflect.DeepEqual(x, y) {
			t.Errorf("%s: %s differs:\n got  %v\n want %v", what, field, y, x)
		}
	}
	check("Format", a.Format, b.Format)
	check("Rank", [2]any{a.Rank, a.RankSource}, [2]any{b.Rank, b.RankSource})
	check("Dist", a.Dist, b.Dist)
	check("Devices", a.Devices, b.Devices)
	check("TraceName", a.TraceName, b.TraceName)
	check("BaseTime", [2]any{a.BaseTimeNS, a.HasBaseTime}, [2]any{b.BaseTimeNS, b.HasBaseTime})
	check("Complete", a.Complete, b.Complete)
	check("Strings", a.Str, b.Str)
	check("Slices", a.Slices, b.Slices)
	check("Steps", a.Steps, b.Steps)
	check("Counters", a.Counters, b.Counters)
	check("Counts", a.Counts, b.Counts)
	check("ThreadNames", a.ThreadNames, b.ThreadNames)
	check("ProcessNames", a.ProcessNames, b.ProcessNames)
	check("Span", [2]int64{a.StartNS, a.EndNS}, [2]int64{b.StartNS, b.EndNS})
	check("JSONBytes", a.JSONBytes, b.JSONBytes)
	check("ETNodes", a.ETNodes, b.ETNodes)
}

// ---- whole traces ------------------------------------------------------------

// basicTrace has one of each phase. ProfilerStep#2 comes first in the file
// to check that steps are ordered by start.
const basicTrace = `{
  "schemaVersion": 1,
  "deviceProperties": [
    {"id": 0, "name": "NVIDIA A100", "totalGlobalMem": 85000000000, "computeMajor": 8, "computeMinor": 0, "numSms": 108},
    {"id": 1, "name": "NVIDIA H100", "computeMajor": 9, "numSms": 132}
  ],
  "traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "python3"}},
    {"ph": "M", "name": "thread_name", "pid": 100, "tid": 7, "args": {"name": "thread 7 (python3)"}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 100, "tid": 7, "ts": 2000, "dur": 1000},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 7, "ts": 1000, "dur": 1000},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 7, "ts": 1100.5, "dur": 200.25,
     "args": {"External id": 11, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 7, "ts": 1500, "dur": 10,
     "args": {"cbid": 211, "correlation": 77, "External id": 11}},
    {"ph": "X", "cat": "kernel", "name": "sgemm_128x64", "pid": 1, "tid": 7, "ts": 2500, "dur": 300.001,
     "args": {"queued": 0, "device": 1, "context": 1, "stream": 7, "correlation": 77, "External id": 11,
              "registers per thread": 64, "shared memory": 16384, "blocks per SM": 0.5,
              "warps per SM": 2.0, "grid": [4, 2, 1], "block": [128, 1, 1], "est. achieved occupancy %": 37.5}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 100, "tid": 7, "ts": 2100, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "outside", "pid": 100, "tid": 7, "ts": 5000, "dur": 5},
    {"ph": "s", "id": 77, "pid": 100, "tid": 7, "ts": 1500, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 77, "pid": 1, "tid": 7, "ts": 2500, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "B", "cat": "user_annotation", "name": "outer", "pid": 100, "tid": 8, "ts": 3000},
    {"ph": "B", "cat": "user_annotation", "name": "inner", "pid": 100, "tid": 8, "ts": 3010},
    {"ph": "E", "pid": 100, "tid": 8, "ts": 3020.5},
    {"ph": "E", "pid": 100, "tid": 8, "ts": 3100},
    {"ph": "E", "pid": 100, "tid": 9, "ts": 3100},
    {"ph": "i", "s": "g", "cat": "", "name": "Iteration Start: PyTorch Profiler", "pid": 100, "tid": 7, "ts": 1000},
    {"ph": "C", "name": "queue", "pid": 100, "ts": 1200, "args": {"value": 3}},
    {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 6000}
  ],
  "traceName": "/tmp/run/trace.json",
  "displayTimeUnit": "ms"
}`

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

func TestReadArrayForm(t *testing.T) {
	doc := " [\n" + `{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":2},
	  {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":3,"dur":1},
	  {},
	  {"ph":"i","s":"g","name":"Record Window End","ts":5}` + "]\n"
	tr := mustRead(t, "t.json", doc)
	if tr.Format != FormatChrome || tr.Slices.Len() != 2 || !tr.Complete || tr.Counts["events"] != 4 {
		t.Errorf("format %s, %d slices, complete %v, counts %v", tr.Format, tr.Slices.Len(), tr.Complete, tr.Counts)
	}
	if nameOf(tr, 1) != "k" || tr.Slices.TS.V[1] != 3000 || tr.EndNS != 4000 {
		t.Errorf("row 1 = %s at %d, end %d", nameOf(tr, 1), tr.Slices.TS.V[1], tr.EndNS)
	}
	for _, doc := range []string{`[]`, ` [ ] `, `{}`, `{"traceEvents":[]}`, `{"traceEvents":[ ]}`} {
		tr := mustRead(t, "t.json", doc)
		if tr.Slices.Len() != 0 || tr.Counts["events"] != 0 || tr.Format != FormatChrome {
			t.Errorf("%q: %d slices, counts %v", doc, tr.Slices.Len(), tr.Counts)
		}
	}
}

func TestReadNegativeDurations(t *testing.T) {
	// a negative dur (or an E before its B) is stored as 0, in the slice
	// and in the step range alike
	doc := `{"traceEvents":[
	  {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":100,"dur":-50},
	  {"ph":"B","cat":"user_annotation","name":"back","pid":1,"tid":1,"ts":10},
	  {"ph":"E","pid":1,"tid":1,"ts":5}
	]}`
	tr := mustRead(t, "t.json", doc)
	if got, want := steps(tr), [][3]int64{{1, 100000, 100000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("steps = %v; want %v", got, want)
	}
	for i, d := range tr.Slices.Dur.V {
		if d != 0 {
			t.Errorf("row %d dur %d; want 0", i, d)
		}
	}
}

func TestReadGPUSteps(t *testing.T) {
	// with no host ProfilerStep ranges, the GPU annotation ranges give the steps
	doc := `{"traceEvents":[
	  {"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#3","pid":0,"tid":7,"ts":100,"dur":50},
	  {"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#3","pid":0,"tid":8,"ts":90,"dur":70},
	  {"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#4","pid":0,"tid":7,"ts":200,"dur":50},
	  {"ph":"X","cat":"cpu_op","name":"op","pid":1,"tid":1,"ts":120,"dur":1}
	]}`
	tr := mustRead(t, "t.json", doc)
	if got, want := steps(tr), [][3]int64{{3, 90000, 160000}, {4, 200000, 250000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("steps = %v; want %v", got, want)
	}
	if got := numAt(&tr.Slices.Step, 3); got != int32(3) {
		t.Errorf("cpu op step = %v", got)
	}
	if got := numAt(&tr.Slices.Device, 0); got != int32(0) {
		t.Errorf("gpu annotation device = %v", got)
	}
}

func TestReadMemoryTimeline(t *testing.T) {
	doc := `[[1696966048083248105, 2, 1024, 3], [-1, 1, 512, 0],
	  [1696966048083248200, 3, -1024, 3], [1696966048083248201, 3, 2048, 3],
	  [1696966048083248300, 4, -2048, 3], [1696966048083248400, 2, 8, 42]]`
	tr := mustRead(t, "memory_timeline.raw", doc)
	if tr.Format != FormatMemoryTimeline || tr.Counts["events"] != 6 || tr.Slices.Len() != 0 {
		t.Fatalf("format %s, counts %v", tr.Format, tr.Counts)
	}
	const m = "memory_timeline_bytes."
	want := []counterRow{
		{m + "temporary", nil, 1696966048083248105, 1024},
		// -1 marks a pre-existing allocation: it moves to the first timestamp
		{m + "parameter", nil, 1696966048083248105, 512},
		{m + "temporary", nil, 1696966048083248200, 0},
		{m + "temporary", nil, 1696966048083248201, 2048},
		{m + "temporary", nil, 1696966048083248300, 0},
		{m + "unknown", nil, 1696966048083248400, 8},
	}
	if got := counters(tr); !reflect.DeepEqual(got, want) {
		t.Errorf("counters:\n got  %+v\n want %+v", got, want)
	}
	tr = mustRead(t, "empty_timeline", `[[1, 2, 3, 4]]`)
	if tr.Format != FormatMemoryTimeline || tr.Counts["events"] != 1 {
		t.Errorf("one entry: format %s counts %v", tr.Format, tr.Counts)
	}
}

func TestReadExecutionTrace(t *testing.T) {
	doc := `{"schema": "1.0.1", "pid": 1234, "time": "2023-09-07 14:00:00", "start_ts": 100,
	  "nodes": [{"name": "[pytorch|profiler|execution_trace|process]", "id": 1, "inputs": {"values": [], "shapes": []}},
	            {"name": "aten::add", "id": 2, "ctrl_deps": 1}, {"id": 3, "attrs": [{"name": "rf_id", "value": "x\"y"}]}],
	  "finish_ts": 200}`
	tr := mustRead(t, "benchmark_simple_add_et.json", doc)
	if tr.Format != FormatExecTrace || tr.ETNodes != 3 || tr.Slices.Len() != 0 {
		t.Errorf("format %s, nodes %d, slices %d", tr.Format, tr.ETNodes, tr.Slices.Len())
	}
	// "nodes" that is not an array is just skipped
	tr = mustRead(t, "t.json", `{"nodes": 3, "traceEvents": []}`)
	if tr.Format != FormatChrome || tr.ETNodes != 0 {
		t.Errorf("format %s, nodes %d", tr.Format, tr.ETNodes)
	}
}

// ---- windows and refills -----------------------------------------------------

// genTrace writes a trace with n steps of varied events, mixing every
// feature the reader has, so that a large one straddles many refills.
func genTrace(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H100","numSms":132}],` + "\n")
	b.WriteString(`"traceEvents":[` + "\n")
	b.WriteString(`{"ph":"M","name":"process_name","pid":100,"tid":0,"args":{"name":"python3"}},` + "\n")
	b.WriteString(`{"ph":"M","name":"thread_name","pid":100,"tid":"PyTorch Profiler","args":{"name":"main \"thread\""}}`)
	ts := 1712195495406752.0
	for step := range n {
		start := ts
		fmt.Fprintf(&b, ",\n"+`{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":100,"tid":100,"ts":%.3f,"dur":%.3f}`, step, start, 950.5)
		for k := range 6 {
			corr := step*10 + k
			t0 := start + float64(k)*150 + 0.125
			fmt.Fprintf(&b, ",\n"+`{"ph":"X","cat":"cpu_op","name":"aten::op_%d \"q\"","pid":100,"tid":100,"ts":%.3f,"dur":%.4f,"args":{"External id":%d,"Input Dims":[[%d,128],[]],"Input type":["float",""],"Sequence number":%d}}`,
				k, t0, 100.12345, corr, k+1, corr)
			fmt.Fprintf(&b, ",\n"+`{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,"ts":"%.1f","dur":4.5,"args":{"cbid":211,"correlation":%d,"External id":%d}}`,
				t0+10, corr, corr)
			if k == 5 {
				fmt.Fprintf(&b, ",\n"+`{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_RING_LL(ncclDevKernelArgsStorage<4096ul>)","pid":0,"tid":20,"ts":%.3f,"dur":300,"args":{"device":0,"stream":20,"correlation":%d,"Collective name":"allreduce","In msg nelems":%d,"Out msg nelems":%d,"Group size":8,"dtype":"BFloat16","Process Group Ranks":[0,1,2,3,4,5,6,7]}}`,
					t0+900, corr, 1<<20, 1<<20)
			} else if k == 2 {
				fmt.Fprintf(&b, ",\n"+`{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":7,"ts":%.3f,"dur":2.25,"args":{"bytes":%d}}`, t0+50, 4096*k)
				fmt.Fprintf(&b, ",\n"+`{"ph":"s","id":%d,"pid":100,"tid":100,"ts":%.1f,"cat":"ac2g","name":"ac2g"}`, corr, t0+10)
				fmt.Fprintf(&b, ",\n"+`{"ph":"f","id":%d,"pid":0,"tid":7,"ts":%.3f,"cat":"ac2g","name":"ac2g","bp":"e"}`, corr, t0+50)
			} else {
				fmt.Fprintf(&b, ",\n"+`{"ph":"X","cat":"kernel","name":"void gemm_kernel<%d>(float*, float const*)","pid":0,"tid":7,"ts":%.3f,"dur":%.3f,"args":{"queued":0,"device":0,"context":1,"stream":7,"correlation":%d,"External id":%d,"registers per thread":%d,"shared memory":0,"grid":[%d,1,1],"block":[256,1,1],"est. achieved occupancy %%":%d}}`,
					k, t0+60, 80.001, corr, corr, 32+k, 100+k, 50+k)
			}
		}
		fmt.Fprintf(&b, ",\n"+`{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":100,"tid":100,"ts":%.3f,"args":{"Total Reserved":%d,"Total Allocated":%d,"Bytes":512,"Device Id":0,"Device Type":1}}`,
			start+500, 1<<30, step*512)
		fmt.Fprintf(&b, ",\n"+`{"ph":"C","name":"queue","pid":100,"ts":%.3f,"args":{"depth":%d,"x":1.5}}`, start+501, step%7)
		fmt.Fprintf(&b, ",\n"+`{"ph":"B","cat":"user_annotation","name":"## backward ##","pid":100,"tid":"PyTorch Profiler","ts":%.3f}`, start+600)
		fmt.Fprintf(&b, ",\n"+`{"ph":"E","pid":100,"tid":"PyTorch Profiler","ts":%.3f}`, start+700.5)
		ts += 1000
	}
	fmt.Fprintf(&b, ",\n"+`{"ph":"i","s":"g","name":"Record Window End","pid":"","tid":"","ts":%.3f}`, ts)
	b.WriteString("\n],\n" + `"distributedInfo":{"backend":"nccl","rank":2,"world_size":8},"baseTimeNanoseconds":1767189312000000000,"traceName":"gen"}` + "\n")
	return []byte(b.String())
}

func TestReadWindowsLargeTrace(t *testing.T) {
	data := genTrace(600)
	if len(data) < 2*initialWindow {
		t.Fatalf("generated %d bytes; want more than two windows", len(data))
	}
	ref, err := Read(bytes.NewReader(data), "gen.json", Options{Rank: -1})
	if err != nil {
		t.Fatal(err)
	}
	// sanity of the reference itself
	if ref.Slices.Len() != 600*20 || ref.Steps.Len() != 600 || ref.Counters.Len() != 600*4 || ref.Rank != 2 ||
		!ref.Complete || ref.JSONBytes != int64(len(data)) || ref.Counts["kind:comm"] != 600 || ref.Counts["events"] != 600*25+3 {
		t.Fatalf("reference: %d slices, %d steps, %d counters, rank %d, complete %v, %d bytes, counts %v",
			ref.Slices.Len(), ref.Steps.Len(), ref.Counters.Len(), ref.Rank, ref.Complete, ref.JSONBytes, ref.Counts)
	}
	for i := range ref.Slices.Len() {
		if kindOf(ref, i) == "memcpy" && !ref.Slices.Correlation.Valid(i) {
			t.Fatalf("memcpy row %d not bound by its flow", i)
		}
		if kindOf(ref, i) != "other" && !ref.Slices.Step.Valid(i) && nameOf(ref, i) != "## backward ##" {
			t.Fatalf("row %d (%s) has no step", i, nameOf(ref, i))
		}
	}

	one, err := Read(iotest.OneByteReader(bytes.NewReader(data)), "gen.json", Options{Rank: -1})
	if err != nil {
		t.Fatal(err)
	}
	sameTrace(t, "one byte per Read", ref, one)

	for _, size := range []int{4096, 333} {
		tr, err := readWindow(data, "gen.json", size)
		if err != nil {
			t.Fatal(err)
		}
		sameTrace(t, fmt.Sprintf("%d-byte window", size), ref, tr)
	}

	z := gz(t, data)
	for _, noPrefetch := range []bool{false, true} {
		tr, err := Read(bytes.NewReader(z), "gen.json.gz", Options{Rank: -1, NoPrefetch: noPrefetch})
		if err != nil {
			t.Fatal(err)
		}
		tr.Path = ref.Path
		sameTrace(t, fmt.Sprintf("gzip (NoPrefetch %v)", noPrefetch), ref, tr)
	}
}

func TestReadWindowsSmallTrace(t *testing.T) {
	small := genTrace(3)
	for _, doc := range [][]byte{[]byte(basicTrace), small} {
		ref, err := Read(bytes.NewReader(doc), "t.json", Options{Rank: -1})
		if err != nil {
			t.Fatal(err)
		}
		one, err := Read(iotest.OneByteReader(bytes.NewReader(doc)), "t.json", Options{Rank: -1})
		if err != nil {
			t.Fatal(err)
		}
		sameTrace(t, "one byte per Read", ref, one)
		half, err := Read(iotest.HalfReader(bytes.NewReader(doc)), "t.json", Options{Rank: -1})
		if err != nil {
			t.Fatal(err)
		}
		sameTrace(t, "half reads", ref, half)
		for _, size := range []int{1, 2, 3, 5, 8, 13, 64, 100} {
			tr, err := readWindow(doc, "t.json", size)
			if err != nil {
				t.Fatalf("%d-byte window: %v", size, err)
			}
			sameTrace(t, fmt.Sprintf("%d-byte window", size), ref, tr)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	data := genTrace(5)
	plain := filepath.Join(dir, "rank-4.trace.json")
	zipped := filepath.Join(dir, "rank-4.trace.json.gz")
	if err := os.WriteFile(plain, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(zipped, gz(t, data), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := ReadFile(plain, Options{Rank: -1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(zipped, Options{Rank: -1})
	if err != nil {
		t.Fatal(err)
	}
	b.Path = a.Path
	sameTrace(t, "gzip file", a, b)
	if a.Rank != 2 || a.Slices.Len() != 5*20 {
		t.Errorf("rank %d, %d slices", a.Rank, a.Slices.Len())
	}

	// the size hint of a gzip file is the uncompressed size from its trailer
	f, err := os.Open(zipped)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	if got := jsonscan.JSONSize(f, st.Size()); got != int64(len(data)) {
		t.Errorf("jsonscan.JSONSize(gz) = %d; want %d", got, len(data))
	}
	g, _ := os.Open(plain)
	defer g.Close()
	if got := jsonscan.JSONSize(g, int64(len(data))); got != int64(len(data)) {
		t.Errorf("jsonscan.JSONSize(plain) = %d", got)
	}

	if _, err := ReadFile(dir, Options{}); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("ReadFile(dir) = %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.json"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v", err)
	}
}

// ---- errors ------------------------------------------------------------------

func TestReadErrors(t *testing.T) {
	valid := []byte(basicTrace)
	cutAt := strings.Index(basicTrace, `"cudaLaunchKernel"`) + 5
	cut := valid[:cutAt]
	z := gz(t, genTrace(300))
	zCut := z[:len(z)-100]
	zBadCRC := bytes.Clone(z)
	zBadCRC[len(zBadCRC)-8] ^= 0xff

	const anyOff = -1
	tests := []struct {
		name   string
		file   string
		data   []byte
		offset int64 // anyOff: checked by within
		within [2]int64
		gz     bool
		msg    []string
	}{
		{name: "empty", data: nil, offset: 0, msg: []string{"empty file"}},
		{name: "whitespace", data: []byte(" \n\t\r\n  "), offset: 0, msg: []string{"empty file"}},
		{name: "empty gzip", data: gz(t, nil), offset: 0, msg: []string{"empty file"}},
		{name: "whitespace gzip", data: gz(t, []byte("\n\n  ")), offset: 0, msg: []string{"empty file"}},
		{name: "truncated event", data: cut, offset: int64(len(cut)),
			msg: []string{"unexpected end of file", "truncated after 5 complete events"}},
		{name: "truncated between events", data: valid[:strings.Index(basicTrace, `{"ph": "X", "cat": "cpu_op", "name": "aten::mm"`)],
			offset: anyOff, within: [2]int64{1, int64(len(basicTrace))}, msg: []string{"truncated after 4 complete events"}},
		{name: "truncated after traceEvents", data: []byte(`{"traceEvents":[]`), offset: 17,
			msg: []string{"expected the end of the JSON document"}},
		{name: "truncated gzip", data: zCut, gz: true, offset: anyOff, within: [2]int64{int64(len(zCut)) / 2, int64(len(zCut))},
			msg: []string{"corrupt or truncated gzip stream"}},
		{name: "gzip checksum", data: zBadCRC, gz: true, offset: anyOff, within: [2]int64{1, int64(len(z))},
			msg: []string{"corrupt or truncated gzip stream"}},
		{name: "gzip header only", data: z[:10], gz: true, offset: anyOff, within: [2]int64{0, 10}, msg: []string{"gzip"}},
		{name: "bad gzip header", data: []byte("\x1f\x8bxxxxxxxxxxxxxxxxxxx"), gz: true, offset: anyOff, within: [2]int64{0, 21},
			msg: []string{"bad gzip header"}},
		{name: "gzip magic only", data: []byte("\x1f\x8b"), gz: true, offset: 2, msg: []string{"bad gzip header"}},
		{name: "memory snapshot", data: []byte(`{"segments":[{"address":1,"blocks":[]}],"device_traces":[[]]}`), offset: 12,
			msg: []string{"memory snapshot", "trainscope profile --memory snap.json"}, file: "snap.json"},
		{name: "memory snapshot device_traces first", data: []byte(`{"device_traces": [], "segments": []}`), offset: 17,
			msg: []string{"memory snapshot", "`trainscope profile --memory"}},
		{name: "pickle", data: []byte("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94"), offset: 0,
			msg: []string{"pickle", "never deserialized"}},
		{name: "pickle protocol 2", data: []byte("\x80\x02}q\x00."), offset: 0, msg: []string{"never deserialized"}},
		{name: "pickle by name", file: "x.pickle", data: []byte(`{"traceEvents":[]}`), offset: 0,
			msg: []string{"never deserialized", "json.dump"}},
		{name: "pkl by name", file: "snapshot.PKL", data: []byte(`{}`), offset: 0, msg: []string{"never deserialized"}},
		{name: "garbage after document", data: []byte(`{"traceEvents":[]} xyz`), offset: 19,
			msg: []string{"unexpected data after the end of the JSON document"}},
		{name: "second document", data: []byte("[]\n[]"), offset: 3, msg: []string{"unexpected data after"}},
		{name: "missing colon", data: []byte(`{"traceEvents":[{"ph":"X","name" "a"}]}`), offset: 33,
			msg: []string{`expected ':' after an event key, found "\"a\"}]}"`}},
		{name: "missing comma between events", data: []byte(`{"traceEvents":[{"ph":"X"} {"ph":"X"}]}`), offset: 27,
			msg: []string{"',' or ']' between trace events"}},
		{name: "event not an object", data: []byte(`{"traceEvents":[1]}`), offset: 16, msg: []string{"an event object"}},
		{name: "bad ts", data: []byte(`{"traceEvents":[{"ph":"X","ts":"abc"}]}`), offset: 31,
			msg: []string{"a number of microseconds"}},
		{name: "bad args separator", data: []byte(`{"traceEvents":[{"ph":"X","args":{"correlation":1;}}]}`), offset: 49,
			msg: []string{"',' or '}' in args"}},
		{name: "not json", data: []byte(`hello`), offset: 0, msg: []string{"a JSON object"}},
		{name: "number", data: []byte(` 42`), offset: 1, msg: []string{"a JSON object"}},
		{name: "array of numbers", data: []byte(`[1, 2]`), offset: 1, msg: []string{"an array of trace events"}},
		{name: "missing comma at top level", data: []byte(`{"a":1 "b":2}`), offset: 7,
			msg: []string{"',' or '}' after a top-level value"}},
		{name: "traceEvents not an array", data: []byte(`{"traceEvents":{}}`), offset: 15, msg: []string{"'[' to start traceEvents"}},
		{name: "bad distributedInfo", data: []byte(`{"distributedInfo":{"rank":"x"},"traceEvents":[]}`), offset: 19,
			msg: []string{"distributedInfo"}},
		{name: "bad execution trace nodes", data: []byte(`{"schema":"1","nodes":[1,2}`), offset: 22, msg: []string{"execution trace nodes"}},
		{name: "bad timeline entry", data: []byte(`[[1,2,3]]`), offset: 7, msg: []string{"memory timeline entry"}},
		{name: "bad literal", data: []byte(`{"traceEvents":[{"ph":"X","x":nope}]}`), offset: 30, msg: []string{"true, false or null"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.file
			if name == "" {
				name = "dir/bad.json"
			}
			for _, noPrefetch := range []bool{false, true} {
				tr, err := Read(bytes.NewReader(tc.data), name, Options{Rank: -1, NoPrefetch: noPrefetch})
				if err == nil {
					t.Fatalf("no error; read %d slices", tr.Slices.Len())
				}
				var fe *FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("error %T %v is not a *FormatError", err, err)
				}
				if fe.Path != name || fe.Compressed != tc.gz {
					t.Errorf("Path %q Compressed %v; want %q %v", fe.Path, fe.Compressed, name, tc.gz)
				}
				if tc.offset != anyOff && fe.Offset != tc.offset {
					t.Errorf("offset %d; want %d (%v)", fe.Offset, tc.offset, err)
				}
				if tc.offset == anyOff && (fe.Offset < tc.within[0] || fe.Offset > tc.within[1]) {
					t.Errorf("offset %d; want within %v (%v)", fe.Offset, tc.within, err)
				}
				msg := err.Error()
				unit := "byte"
				if tc.gz {
					unit = "compressed byte"
				}
				if prefix := fmt.Sprintf("%s: %s %d: ", name, unit, fe.Offset); !strings.HasPrefix(msg, prefix) {
					t.Errorf("error %q does not start with %q", msg, prefix)
				}
				for _, m := range tc.msg {
					if !strings.Contains(msg, m) {
						t.Errorf("error %q does not mention %q", msg, m)
					}
				}
			}
			// the same error comes back however the input is cut into reads
			// (the context quoted after "found" depends on the window)
			// (gzip offsets count what the decompressor buffered, so they are not compared)
			if tc.file == "" && !tc.gz && len(tc.data) > 0 && tc.data[0] != 0x80 {
				_, e1 := Read(bytes.NewReader(tc.data), name, Options{Rank: -1})
				_, e2 := Read(iotest.OneByteReader(bytes.NewReader(tc.data)), name, Options{Rank: -1})
				if e2 == nil || e1.Error() != e2.Error() {
					t.Errorf("one byte per Read: %v; want %v", e2, e1)
				}
				if tc.data[0] != 0x1f {
					_, e3 := readWindow(tc.data, name, 3)
					short := func(err error) string {
						if err == nil {
							return "<nil>"
						}
						s, _, _ := strings.Cut(err.Error(), ", found")
						return s
					}
					if short(e1) != short(e3) {
						t.Errorf("3-byte window: %v; want %v", e3, e1)
					}
				}
			}
		})
	}
}

func TestReadErrorFromReader(t *testing.T) {
	// a failing reader ends the read with a FormatError, after the data
	// that came before the failure, and does not loop
	boom := errors.New("boom")
	data := genTrace(3)
	r := io.MultiReader(bytes.NewReader(data[:len(data)/2]), iotest.ErrReader(boom))
	_, err := Read(r, "t.json", Options{Rank: -1})
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "read error: boom") || fe.Offset != int64(len(data)/2) {
		t.Errorf("err = %v", err)
	}
	// a failure right after a complete document is still an error
	r = io.MultiReader(bytes.NewReader([]byte(basicTrace)), iotest.ErrReader(boom))
	if _, err := Read(r, "t.json", Options{Rank: -1}); !errors.As(err, &fe) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("err after the document = %v", err)
	}
	// and so is one at the very start
	if _, err := Read(iotest.ErrReader(boom), "t.json", Options{Rank: -1}); !errors.As(err, &fe) {
		t.Errorf("err at start = %v", err)
	}
}

func TestGPUName(t *testing.T) {
	tr := mustRead(t, "t.json", `{"deviceProperties":[{"id":0,"name":"A"},{"id":1,"name":"B"}],
	  "traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1}]}`)
	if got := tr.GPUName(); got != "A" {
		t.Errorf("GPUName without GPU rows = %q; want the first device", got)
	}
	tr = mustRead(t, "t.json", `{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":3,"tid":1,"ts":1,"dur":1}]}`)
	if got := tr.GPUName(); got != "" {
		t.Errorf("GPUName without deviceProperties = %q", got)
	}
	// deviceProperties that do not decode are ignored
	tr = mustRead(t, "t.json", `{"deviceProperties":{"id":"x"},"traceEvents":[]}`)
	if len(tr.Devices) != 0 {
		t.Errorf("Devices = %+v", tr.Devices)
	}
}

func TestHasEvents(t *testing.T) {
	for doc, want := range map[string]bool{
		`{"traceEvents": []}`:                           true,
		`[{"ph": "X", "name": "a", "ts": 1, "dur": 1}]`: true,
		`{"lr": 0.1}`:                                   false,
		`{"distributedInfo": {"rank": 1}}`:              false,
	} {
		tr, err := Read(strings.NewReader(doc), "x.json", Options{Rank: -1})
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if tr.HasEvents != want {
			t.Errorf("%s: HasEvents = %v, want %v", doc, tr.HasEvents, want)
		}
	}
}

func TestSelfTimes(t *testing.T) {
	doc := `{"traceEvents": [
	 {"ph": "X", "cat": "cpu_op", "name": "A", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
	 {"ph": "X", "cat": "cpu_op", "name": "B", "pid": 1, "tid": 1, "ts": 10, "dur": 30},
	 {"ph": "X", "cat": "cpu_op", "name": "C", "pid": 1, "tid": 1, "ts": 15, "dur": 10},
	 {"ph": "X", "cat": "cpu_op", "name": "D", "pid": 1, "tid": 1, "ts": 50, "dur": 40},
	 {"ph": "X", "cat": "cpu_op", "name": "E", "pid": 1, "tid": 2, "ts": 20, "dur": 5},
	 {"ph": "X", "cat": "kernel", "name": "K", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"stream": 7}}]}`
	tr, err := Read(strings.NewReader(doc), "self.json", Options{Rank: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"A": 30000, "B": 20000, "C": 10000, "D": 40000, "E": 5000}
	for i := range tr.Slices.Len() {
		name := tr.Str.Get(tr.Slices.Name.V[i])
		if name == "K" {
			if tr.Slices.SelfDur.Valid(i) {
				t.Error("a kernel has a self time")
			}
			continue
		}
		if got := tr.Slices.SelfDur.V[i]; !tr.Slices.SelfDur.Valid(i) || got != want[name] {
			t.Errorf("self(%s) = %d, want %d", name, got, want[name])
		}
	}
}

// TestStacks checks the call stacks: a frame's node is its caller's node
// plus its name, shared by every call through the same callers; the step
// annotations of different steps are one frame.
func TestStacks(t *testing.T) {
	doc := `{"traceEvents": [
	 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
	 {"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 10, "dur": 30},
	 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 15, "dur": 10},
	 {"ph": "X", "cat": "python_function", "name": "g", "pid": 1, "tid": 1, "ts": 50, "dur": 40},
	 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 55, "dur": 10},
	 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
	 {"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 110, "dur": 30},
	 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 115, "dur": 10},
	 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 20, "dur": 5},
	 {"ph": "X", "cat": "kernel", "name": "K", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"stream": 7}}]}`
	tr, err := Read(strings.NewReader(doc), "stacks.json", Options{Rank: -1})
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Slices
	path := func(id int32) string {
		var frames []string
		for ; id >= 0; id = s.Stacks[id].Parent {
			frames = append([]string{tr.Str.Get(s.Stacks[id].Name)}, frames...)
		}
		return strings.Join(frames, " > ")
	}
	got := map[string]int{} // path -> calls
	for i := range s.Len() {
		if !s.StackID.Valid(i) {
			if name := tr.Str.Get(s.Name.V[i]); name != "K" {
				t.Errorf("%s has no stack", name)
			}
			continue
		}
		got[path(s.StackID.V[i])]++
	}
	want := map[string]int{
		"ProfilerStep#*": 2, "ProfilerStep#* > f": 2, "ProfilerStep#* > f > aten::mm": 2,
		"ProfilerStep#* > g": 1, "ProfilerStep#* > g > aten::mm": 1, "aten::mm": 1,
	}
	if !maps.Equal(got, want) {
		t.Errorf("calls per stack = %v, want %v", got, want)
	}
	if len(s.Stacks) != len(want) {
		t.Errorf("%d stack nodes, want %d", len(s.Stacks), len(want))
	}
	for id, n := range s.Stacks {
		if n.Parent >= 0 && n.Depth != s.Stacks[n.Parent].Depth+1 || n.Parent < 0 && n.Depth != 0 {
			t.Errorf("stack %d (%s) has depth %d", id, path(int32(id)), n.Depth)
		}
	}
}

// TestGPUBusyDur checks each host slice's GPU busy time: its overlap with
// the union of the trace's GPU work on any stream (overlapping and touching
// intervals merged).
func TestGPUBusyDur(t *testing.T) {
	doc := `{"traceEvents": [
	 {"ph": "X", "cat": "cpu_op", "name": "whole", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
	 {"ph": "X", "cat": "cpu_op", "name": "tail", "pid": 1, "tid": 2, "ts": 30, "dur": 20},
	 {"ph": "X", "cat": "cuda_runtime", "name": "idle", "pid": 1, "tid": 3, "ts": 45, "dur": 15},
	 {"ph": "X", "cat": "python_function", "name": "inside", "pid": 1, "tid": 4, "ts": 21, "dur": 2},
	 {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 20, "dur": 10, "args": {"stream": 7}},
	 {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 8, "ts": 25, "dur": 15, "args": {"stream": 8}},
	 {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, "ts": 40, "dur": 5, "args": {"stream": 7}}]}`
	tr, err := Read(strings.NewReader(doc), "busy.json", Options{Rank: -1})
	if err != nil {
		t.Fatal(err)
	}
	// the GPU is busy 20-45 µs
	want := map[string]int64{"whole": 25000, "tail": 15000, "idle": 0, "inside": 2000}
	s := tr.Slices
	for i := range s.Len() {
		name := tr.Str.Get(s.Name.V[i])
		w, host := want[name]
		if got := s.GPUBusyDur.V[i]; s.GPUBusyDur.Valid(i) != host || host && got != w {
			t.Errorf("gpu_busy_dur(%s) = %d (valid %v), want %d (valid %v)", name, got, s.GPUBusyDur.Valid(i), w, host)
		}
	}
}
