package detectors_test

import (
	"testing"

	"github.com/trainscope/trainscope/detectors"
)

// TestHostExposedStacks checks that host_exposed tells call stacks apart:
// aten::mm called from f and from g are two stacks, each with its own
// exposed self time, and a stack deeper than `frames` is cut at the root.
func TestHostExposedStacks(t *testing.T) {
	dir := t.TempDir()
	b := newTrace(0, 1)
	b.Step(1, 0, 1000)
	py := func(name string, ts, dur int64) {
		b.Add(map[string]any{"ph": "X", "cat": "python_function", "name": name, "pid": 100, "tid": 100, "ts": ts, "dur": dur})
	}
	op := func(name string, ts, dur int64) {
		b.Add(map[string]any{"ph": "X", "cat": "cpu_op", "name": name, "pid": 100, "tid": 100, "ts": ts, "dur": dur})
	}
	py("train.py(1): f", 10, 400)
	op("aten::mm", 20, 200)
	py("train.py(9): g", 500, 400)
	op("aten::mm", 510, 100)
	// the only GPU work, 950-1000 µs: f and g run while the GPU is idle
	b.Launch("cudaLaunchKernel", 920, 5, "kernel", "gemm_k1", 7, 950, 50, nil)
	b.Step(2, 1000, 10) // the last step is left out of the window
	b.Write(t, dir)

	cases := []struct {
		frames float64
		want   map[string]float64 // subject -> exposed self µs
	}{
		{4, map[string]float64{
			"python ProfilerStep#* > train.py(1): f":            200,
			"cpu_op ProfilerStep#* > train.py(1): f > aten::mm": 200,
			"python ProfilerStep#* > train.py(9): g":            300,
			"cpu_op ProfilerStep#* > train.py(9): g > aten::mm": 100,
		}},
		{2, map[string]float64{
			"python ProfilerStep#* > train.py(1): f": 200,
			"cpu_op … > train.py(1): f > aten::mm":   200,
			"python ProfilerStep#* > train.py(9): g": 300,
			"cpu_op … > train.py(9): g > aten::mm":   100,
		}},
	}
	for _, c := range cases {
		cfg := detectors.Config{Thresholds: map[string]map[string]float64{"host_exposed": {"frames": c.frames}}}
		st, _ := analyzeDir(t, dir, "stacks", detectors.Window{}, cfg)
		for subject, want := range c.want {
			if got := metric(t, st, "host_exposed", 0, subject, "exposed_self_ns"); got != want*us {
				t.Errorf("frames=%v %s: exposed %v, want %v", c.frames, subject, got, want*us)
			}
		}
		// the GPU span is the kernel's 50 µs: f's 200 µs are 400% of it
		if got := metric(t, st, "host_exposed", 0, "python ProfilerStep#* > train.py(1): f", "exposed_pct"); got != 400 {
			t.Errorf("frames=%v: f exposed_pct %v, want 400", c.frames, got)
		}
	}
}
