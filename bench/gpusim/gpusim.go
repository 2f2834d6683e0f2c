package gpusim

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// Scenario names one simulated job, as bench/gpu/scenarios.py names the
// real ones.
type Scenario string

// The scenarios, each with the cause its report must blame (Cause).
const (
	Healthy     Scenario = "healthy"
	StallOnce   Scenario = "stall_once"
	SlowInput   Scenario = "slow_input"
	Sync        Scenario = "sync"
	PageableH2D Scenario = "pageable_h2d"
	FP32        Scenario = "fp32"
	LaunchBound Scenario = "launch_bound"
)

// Scenarios lists every scenario.
var Scenarios = []Scenario{Healthy, StallOnce, SlowInput, Sync, PageableH2D, FP32, LaunchBound}

// Cause is what a report of the scenario must name first: none, stall,
// input, sync, copies, precision or launch.
func (s Scenario) Cause() string {
	return map[Scenario]string{Healthy: "none", StallOnce: "stall", SlowInput: "input", Sync: "sync",
		PageableH2D: "copies", FP32: "precision", LaunchBound: "launch"}[s]
}

// Options shape one simulated trace.
type Options struct {
	Scenario Scenario
	// Steps is how many ProfilerSteps are recorded (default 6); the
	// first is numbered 3, as after a wait of 1 and a warmup of 2.
	Steps int
	Seed  uint64
	// Strength scales the injected fault: 1 is scenarios.py's dose (150
	// ms stall, 60 ms of input, 0.5 ms after each sync, 512 MB copied);
	// 0.25 a weak one. Ignored by healthy, fp32 and launch_bound.
	Strength float64
	// StallStep is the stall's step among the recorded ones, counted from
	// 1, stall_once only; 0: the third (the second when fewer than 4).
	StallStep int
}

// Label is what was injected, as scenarios.py writes it to labels.json.
type Label struct {
	Name  string `json:"name"`
	Dir   string `json:"dir"`
	Cause string `json:"cause"`
	What  string `json:"what"`
	// StepIndex is the stall's step among the recorded ones (0-based).
	StepIndex *int    `json:"step_index,omitempty"`
	MS        float64 `json:"ms,omitempty"`
}

// Write writes the scenario's trace to dir/rank-0.pt.trace.json.gz.
func Write(dir string, opt Options) (Label, error) {
	raw, label := Trace(opt)
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		return label, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return label, err
	}
	label.Dir = filepath.Base(dir)
	return label, os.WriteFile(filepath.Join(dir, "rank-0.pt.trace.json.gz"), b.Bytes(), 0o644)
}

// Trace is the scenario's trace as JSON, and its label.
func Trace(opt Options) ([]byte, Label) {
	if opt.Steps <= 0 {
		opt.Steps = 6
	}
	if opt.Strength <= 0 {
		opt.Strength = 1
	}
	s := &sim{rng: rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15)), host: 1_700_000_000_000_000, opt: opt}
	s.gpu = s.host
	label := Label{Name: string(opt.Scenario), Dir: string(opt.Scenario), Cause: opt.Scenario.Cause()}
	stallAt := 2
	if opt.Steps < 4 {
		stallAt = opt.Steps / 2
	}
	if opt.StallStep > 0 && opt.StallStep <= opt.Steps {
		stallAt = opt.StallStep - 1
	}
	for i := range opt.Steps {
		start := s.host
		s.stepPrelude(i, stallAt)
		if opt.Scenario == LaunchBound {
			s.mlpStep()
		} else {
			s.gptStep()
		}
		s.userAnnotation(fmt.Sprintf("ProfilerStep#%d", i+3), start, s.host-start, mainTID)
		s.host += 20 + 10*s.rng.Float64() // prof.step()
	}
	switch opt.Scenario {
	case Healthy:
		label.What = "a 166M-parameter transformer, bf16, fused AdamW; nothing injected"
	case StallOnce:
		label.What, label.MS, label.StepIndex = "a one-off host stall (save_checkpoint_metadata) before one step", 150*opt.Strength, &stallAt
	case SlowInput:
		label.What, label.MS = "Python in a single-process DataLoader before every step", 60*opt.Strength
	case Sync:
		label.What, label.MS = ".item() of each layer's activation norm, then Python on the value", 0.5*opt.Strength
	case PageableH2D:
		label.What, label.MS = "a pageable host tensor copied to the GPU every step", 512*opt.Strength
	case FP32:
		label.What = "every matmul in FP32 with TF32 off"
	case LaunchBound:
		label.What = "a tiny MLP and a per-parameter Adam: thousands of microsecond kernels"
	}
	doc := map[string]any{
		"schemaVersion": 1, "traceName": "rank-0.pt.trace.json", "record_shapes": 1, "with_stack": 1,
		"deviceProperties": []map[string]any{{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150754820096,
			"computeMajor": 9, "computeMinor": 0, "numSms": 132, "maxThreadsPerBlock": 1024, "warpSize": 32}},
		"cuda_runtime_version": 12080, "baseTimeNanoseconds": 0,
		"traceEvents": s.ev,
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		panic(err) // only maps of numbers and strings
	}
	return raw, label
}

const (
	mainTID     = 4100 // the Python main thread
	autogradTID = 4133 // the autograd engine's thread, which launches backward
	pid         = 4100
	stream      = 7
	queueDepth  = 1024 // kernels the launch queue holds before a launch blocks
)

// sim is one GPU's clocks (µs since the epoch) and the events so far.
type sim struct {
	rng       *rand.Rand
	opt       Options
	host, gpu float64
	starts    []float64 // each launched kernel's start, in launch order
	corr, ext int
	ev        []map[string]any
}

func (s *sim) add(ev map[string]any) { s.ev = append(s.ev, ev) }

func (s *sim) jitter(sigma float64) float64 { return math.Exp(s.rng.NormFloat64() * sigma) }

func (s *sim) cpu(cat, name string, ts, dur float64, tid int, args map[string]any) {
	ev := map[string]any{"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
	if args != nil {
		ev["args"] = args
	}
	s.add(ev)
}

func (s *sim) userAnnotation(name string, ts, dur float64, tid int) {
	s.ext++
	s.cpu("user_annotation", name, ts, dur, tid, map[string]any{"External id": s.ext})
}

// kern is one GPU activity an operator starts.
type kern struct {
	name string
	dur  float64 // µs
}

// launch records a cudaLaunchKernel at the host clock on tid and its
// kernel; a full launch queue holds the call until a slot frees.
func (s *sim) launch(k kern, tid, ext int) {
	if n := len(s.starts); n >= queueDepth && s.starts[n-queueDepth] > s.host {
		s.host = s.starts[n-queueDepth]
	}
	s.corr++
	call := 4 + 3*s.rng.Float64()
	s.cpu("cuda_runtime", "cudaLaunchKernel", s.host, call, tid, map[string]any{"correlation": s.corr, "cbid": 211})
	start := math.Max(s.host+call+1.5, s.gpu)
	d := k.dur * s.jitter(0.04)
	s.add(map[string]any{"ph": "X", "cat": "kernel", "name": k.name, "pid": 0, "tid": stream, "ts": start, "dur": d,
		"args": map[string]any{"device": 0, "stream": stream, "correlation": s.corr, "External id": ext, "grid": []int{132, 1, 1}, "block": []int{256, 1, 1}}})
	s.gpu = start + d
	s.starts = append(s.starts, start)
	s.host += call
}

// op records an ATen operator on tid that costs host µs of host time and
// launches ks; dims and types are its recorded input shapes and dtypes.
func (s *sim) op(name string, dims [][]int, types []string, host float64, tid int, ks ...kern) {
	s.ext++
	ext := s.ext
	start := s.host
	host *= s.jitter(0.15)
	s.host += host * 0.6
	for _, k := range ks {
		s.launch(k, tid, ext)
	}
	s.host += host * 0.4
	args := map[string]any{"External id": ext, "Record function id": 0}
	if dims != nil {
		args["Input Dims"], args["Input type"] = dims, types
	}
	s.cpu("cpu_op", name, start, s.host-start, tid, args)
}

// copyOp records aten::to of bytes in direction dir ("HtoD", "DtoH") from
// or to pageable memory: the call returns once the copy is done, and the
// copy waits for the stream's earlier work.
func (s *sim) copyOp(dir string, bytes int64, gbps float64, tid int) {
	s.ext++
	ext := s.ext
	start := s.host
	s.host += 12 * s.jitter(0.1)
	s.corr++
	begin := math.Max(s.host+3, s.gpu)
	d := float64(bytes)/(gbps*1e3) + 1.5
	name := "Memcpy HtoD (Pageable -> Device)"
	if dir == "DtoH" {
		name = "Memcpy DtoH (Device -> Pageable)"
	}
	s.add(map[string]any{"ph": "X", "cat": "gpu_memcpy", "name": name, "pid": 0, "tid": stream, "ts": begin, "dur": d,
		"args": map[string]any{"device": 0, "stream": stream, "correlation": s.corr, "External id": ext, "bytes": bytes,
			"memory bandwidth (GB/s)": float64(bytes) / (d * 1e3)}})
	s.gpu = begin + d
	s.starts = append(s.starts, begin)
	end := begin + d + 4
	s.cpu("cuda_runtime", "cudaMemcpyAsync", s.host, end-s.host, tid, map[string]any{"correlation": s.corr, "cbid": 41})
	s.host = end + 6
	types := []string{"float", "Scalar"}
	if dir == "DtoH" {
		s.cpu("cpu_op", "aten::_local_scalar_dense", start, s.host-start, tid, map[string]any{"External id": ext})
		s.cpu("cpu_op", "aten::item", start, s.host-start+2, tid, map[string]any{"External id": ext})
		s.host += 3
		return
	}
	s.cpu("cpu_op", "aten::copy_", start+4, s.host-start-6, tid, map[string]any{"External id": ext})
	s.cpu("cpu_op", "aten::to", start, s.host-start, tid, map[string]any{"External id": ext, "Input Dims": [][]int{{int(bytes / 4)}, {}}, "Input type": types})
}

// python records a Python frame of dur µs of host work on the main thread.
func (s *sim) python(name string, dur float64) {
	s.cpu("python_function", name, s.host, dur, mainTID, map[string]any{"Python id": len(s.ev)})
	s.host += dur
}

// stepPrelude is what happens on the host before step i's first launch.
func (s *sim) stepPrelude(i, stallAt int) {
	k := s.opt.Strength
	switch s.opt.Scenario {
	case StallOnce:
		if i == stallAt {
			t0 := s.host
			s.python("bench/gpu/scenarios.py(72): busy", 150_000*k)
			s.cpu("python_function", "bench/gpu/scenarios.py(82): save_checkpoint_metadata", t0-5, s.host-t0+10, mainTID, nil)
			s.host += 5
		}
	case SlowInput:
		t0 := s.host
		for range 8 {
			s.python("bench/gpu/scenarios.py(99): __getitem__", 60_000*k/8*s.jitter(0.05))
		}
		s.cpu("cpu_op", "aten::stack", s.host, 40, mainTID, map[string]any{"External id": s.ext + 1})
		s.ext++
		s.host += 45
		s.cpu("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0, s.host-t0, mainTID, map[string]any{"External id": s.ext + 1})
		s.ext++
		s.copyOp("HtoD", 8*1025*8, 6, mainTID)
		return
	}
	if s.opt.Scenario != LaunchBound {
		s.op("aten::randint", [][]int{{}, {}, {8, 1025}}, []string{"Scalar", "Scalar", "ScalarList"}, 25, mainTID,
			kern{"void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<long, 2>(int)", 6})
	}
	if s.opt.Scenario == PageableH2D {
		s.copyOp("HtoD", int64(512*k)<<20, 8, mainTID)
	}
}
