package kineto

import (
	"bytes"
	"compress/gzip"
	"reflect"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/ingest/jsonscan"
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

func counters(tr *Trace) []counterRow { return counterRows(tr.Str, &tr.Counters) }

func counterRows(str *stream.Strings, c *stream.CounterTable) []counterRow {
	var out []counterRow
	for i := range c.Len() {
		out = append(out, counterRow{str.Get(c.Metric.V[i]), numAt(&c.Device, i), c.TS.V[i], c.Value.V[i]})
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
