package kineto

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/trainscope/trainscope/ingest/jsonscan"
)

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
		{name: "gzipped pickle", data: gz(t, []byte("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94")), offset: 0,
			msg: []string{"gzipped Python pickle", "never deserialized"}},
		{name: "gzipped pickle by name", file: "snap.pkl.gz", data: gz(t, []byte(`{}`)), offset: 0, msg: []string{"never deserialized"}},
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
