package kineto

import (
	"maps"
	"strings"
	"testing"
)

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
