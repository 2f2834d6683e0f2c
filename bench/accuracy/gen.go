package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// Topology of every generated run: ranks spread over hosts in blocks of
// perHost, tensor-parallel groups of tp consecutive ranks (inside a host)
// and one data-parallel group of all ranks.
type topology struct {
	ranks, perHost, tp, steps int
}

func (t topology) hosts() int  { return (t.ranks + t.perHost - 1) / t.perHost }
func (t topology) groups() int { return t.ranks / t.tp }

func hostName(h int) string { return fmt.Sprintf("node%02d", h) }

// Kernel names as real bf16 transformer traces spell them, so that the
// detectors' name-based classification (COMP, COMM, MEM) sees the usual mix.
const (
	kGemmQKV  = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
	kFlash    = "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, true, true, false>(Flash_fwd_params)"
	kGemmOut  = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
	kGelu     = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)"
	kNorm     = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)"
	kGemmBwd  = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
	kAdam     = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::BFloat16, 4, (at::native::ADAM_MODE)0, false>, double*, double, double, double, double, double, bool, double*, double*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::BFloat16, 4, (at::native::ADAM_MODE)0, false>, double*, double, double, double, double, double, bool, double*, double*)"
	kTiny     = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"
	kAllReduc = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
	loaderOp  = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
)

const (
	compStream = 7
	commStream = 20
	layers     = 4
	tpBytes    = 16 << 20 // a TP all-reduce of activations
	dpBytes    = 64 << 20 // one DP gradient bucket
	tpBusGBps  = 180.0    // NVLink-class bus bandwidth of a healthy TP group
	dpBusGBps  = 40.0     // cross-host bus bandwidth of the DP group
)

// rankSim is one rank's clocks (µs) and the events written so far.
type rankSim struct {
	rank    int
	host    float64 // host thread clock
	gpu     map[int]float64
	speed   float64 // this GPU's natural speed factor (healthy ranks differ by ~1%)
	events  []map[string]any
	corr    int
	stopped bool // a hung rank records nothing after it stops
}

// sim generates one scenario's run; rng drives every random choice so that
// a seed reproduces the same traces.
type sim struct {
	t     topology
	f     Fault
	all   []Fault // f and its second fault
	rng   *rand.Rand
	ranks []*rankSim
	pgs   []map[string]any // distributedInfo.pg_config
}

// jitter is a multiplicative noise of about sigma (log-normal).
func (s *sim) jitter(sigma float64) float64 { return math.Exp(s.rng.NormFloat64() * sigma) }

func (r *rankSim) add(ev map[string]any) { r.events = append(r.events, ev) }

// launch records the runtime call at the host clock and the GPU activity
// it starts on stream once both the call and the stream's earlier work are
// done; it returns the activity's start and end.
func (s *sim) launch(r *rankSim, api string, cat, name string, stream int, gdur float64, args map[string]any) (float64, float64) {
	r.corr++
	call := 5 + 3*s.rng.Float64()
	r.add(map[string]any{"ph": "X", "cat": "cuda_runtime", "name": api, "pid": 1000 + r.rank, "tid": 1000 + r.rank,
		"ts": r.host, "dur": call, "args": map[string]any{"correlation": r.corr, "External id": r.corr}})
	start := math.Max(r.host+call+2, r.gpu[stream])
	a := map[string]any{"device": 0, "stream": stream, "correlation": r.corr, "External id": r.corr}
	for k, v := range args {
		a[k] = v
	}
	r.add(map[string]any{"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": start, "dur": gdur, "args": a})
	r.gpu[stream] = start + gdur
	r.host += call + 10 + 15*s.rng.Float64() // Python and dispatcher time between launches
	return start, start + gdur
}

// compute launches a compute kernel whose healthy duration is base µs.
func (s *sim) compute(r *rankSim, step int, name string, base float64) {
	if r.stopped {
		return
	}
	d := base * r.speed * s.jitter(0.03) * s.slowdown(r.rank, step)
	s.launch(r, "cudaLaunchKernel", "kernel", name, compStream, d, nil)
	s.maybeSync(r, step)
}

// slowdown is the injected compute factor of a rank at a step.
func (s *sim) slowdown(rank, step int) float64 {
	x := 1.0
	if s.f.clean() && rank == s.f.Rank {
		x *= s.f.Factor
	}
	for _, f := range s.all {
		if step < f.Step {
			continue
		}
		switch f.Type {
		case SlowRank:
			if rank == f.Rank {
				x *= f.Factor
			}
		case SlowHost:
			if rank/s.t.perHost == f.Host {
				x *= f.Factor * (1 + 0.02*float64(rank%3-1)) // the host's GPUs are not identical either
			}
		}
	}
	return x
}

// fault returns the run's fault of type ft, if it has one.
func (s *sim) fault(ft FaultType) (Fault, bool) {
	for _, f := range s.all {
		if f.Type == ft {
			return f, true
		}
	}
	return Fault{}, false
}

// maybeSync inserts the injected host synchronisation: the call holds the
// host until every stream has drained, as cudaDeviceSynchronize or a
// cudaStreamSynchronize on the busy stream does, and then the host works
// on what it read while the GPU waits for its next launch.
func (s *sim) maybeSync(r *rankSim, step int) {
	f, ok := s.fault(SyncAPI)
	if !ok || r.rank != f.Rank || step < f.Step || s.rng.Float64() >= f.Rate {
		return
	}
	api := "cudaStreamSynchronize"
	if s.rng.IntN(2) == 0 {
		api = "cudaDeviceSynchronize"
	}
	end := r.host + 3
	for _, g := range r.gpu {
		end = math.Max(end, g+2)
	}
	r.add(map[string]any{"ph": "X", "cat": "cuda_runtime", "name": api, "pid": 1000 + r.rank, "tid": 1000 + r.rank,
		"ts": r.host, "dur": end - r.host, "args": map[string]any{}})
	// what a step synchronizes for: the host reads the value and acts on
	// it (logs it, checks it for NaN, branches on it) while the drained
	// GPU has nothing queued
	work := 200 + 800*s.rng.Float64()
	r.add(map[string]any{"ph": "X", "cat": "python_function", "name": "train.py(212): log_metrics", "pid": 1000 + r.rank, "tid": 1000 + r.rank,
		"ts": end + 5, "dur": work})
	r.host = end + 5 + work + 5
}

// collective runs one all-reduce on every group of members: each member
// launches it when its host gets there, it starts once the member's compute
// before it is done, and it ends when the last member has arrived plus the
// transfer time. Compute waits for it (the next layer
// needs its output). hangAt, when a member is hung, ends every waiting
// member's kernel at that time instead.
func (s *sim) collective(step int, groups [][]int, bytes int, busGBps float64, desc string, hangEnd float64) {
	link, slowLink := s.fault(SlowLink)
	for gi, members := range groups {
		n := len(members)
		factor := 2 * float64(n-1) / float64(n)
		transfer := float64(bytes) * factor / (busGBps * 1e3) * s.jitter(0.03) // bytes / (GB/s) in µs
		if slowLink && desc == "tp" && gi == link.Group && step >= link.Step {
			transfer *= link.Factor
		}
		if s.f.clean() && desc == "tp" && gi == s.f.Group {
			transfer *= s.f.Rate
		}
		if s.f.Type == Distractor {
			transfer *= s.f.Comm
		}
		ranks := "[" + joinInts(members) + "]"
		args := map[string]any{"Collective name": "allreduce", "In msg nelems": bytes / 2, "Out msg nelems": bytes / 2,
			"Group size": n, "dtype": "BFloat16", "Process Group Name": fmt.Sprintf("%s:%d", desc, gi),
			"Process Group Description": desc, "Process Group Ranks": ranks}
		type st struct {
			r     *rankSim
			start float64
			idx   int
		}
		var started []st
		last, hung := 0.0, false
		for _, m := range members {
			r := s.ranks[m]
			if r.stopped {
				hung = true
				continue
			}
			// ProcessGroupNCCL makes its stream wait for the compute
			// stream's work (an event) before the collective: a rank
			// arrives when its layer's compute is done, not when its host
			// launched the collective
			r.gpu[commStream] = math.Max(r.gpu[commStream], r.gpu[compStream])
			start, _ := s.launch(r, "cudaLaunchKernel", "kernel", kAllReduc, commStream, 0, args)
			started = append(started, st{r, start, len(r.events) - 1})
			last = math.Max(last, start)
		}
		for _, x := range started {
			end := last + transfer
			if hung {
				end = hangEnd
			}
			x.r.events[x.idx]["dur"] = end - x.start
			x.r.gpu[commStream] = end
			x.r.gpu[compStream] = math.Max(x.r.gpu[compStream], end)
		}
	}
}

func joinInts(v []int) string {
	out := ""
	for i, x := range v {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprint(x)
	}
	return out
}

// newSim lays out the ranks and process groups.
func newSim(t topology, f Fault, seed uint64) *sim {
	s := &sim{t: t, f: f, all: f.parts(), rng: rand.New(rand.NewPCG(seed, 0x5eed))}
	t0 := 1.7e15 + float64(seed%1000)*1e6 // µs since the epoch
	for r := range t.ranks {
		s.ranks = append(s.ranks, &rankSim{rank: r, host: t0 + 200*s.rng.Float64(), gpu: map[int]float64{}, speed: 1 + 0.01*s.rng.NormFloat64()})
	}
	return s
}

func (s *sim) tpGroups() [][]int {
	var out [][]int
	for g := range s.t.groups() {
		var m []int
		for i := range s.t.tp {
			m = append(m, g*s.t.tp+i)
		}
		out = append(out, m)
	}
	return out
}

func (s *sim) dpGroup() [][]int {
	var m []int
	for r := range s.t.ranks {
		m = append(m, r)
	}
	return [][]int{m}
}

// run simulates every step of every rank in lock step: the ranks only
// interact at collectives, which are simulated for all ranks at once.
func (s *sim) run() {
	t, f := s.t, s.f
	lastStep := t.steps
	hangEnd := 0.0
	if f.Type == Hang {
		lastStep = f.Step
	}
	for step := 1; step <= lastStep; step++ {
		starts := make([]float64, t.ranks)
		for _, r := range s.ranks {
			starts[r.rank] = r.host
			// the data loader hands over the batch, then the input copy
			d := 300 + 400*s.rng.Float64()
			for _, f := range s.all {
				if (f.Type == DataStall || f.clean()) && r.rank == f.Rank && step == f.Step {
					d += f.StallUs
				}
			}
			r.add(map[string]any{"ph": "X", "cat": "cpu_op", "name": loaderOp, "pid": 1000 + r.rank, "tid": 1000 + r.rank, "ts": r.host + 5, "dur": d})
			r.host += d + 10
			s.launch(r, "cudaMemcpyAsync", "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", compStream, 180*s.jitter(0.05), map[string]any{"bytes": 8 << 20})
			if pf, ok := s.fault(PageableMemcpy); ok && r.rank == pf.Rank && step >= pf.Step {
				for range pf.Calls {
					b := (1 + s.rng.IntN(64)) << 20
					d := float64(b) / 3e3 * s.jitter(0.05) // ~3 GB/s through a staging buffer
					_, end := s.launch(r, "cudaMemcpyAsync", "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", compStream, d, map[string]any{"bytes": b})
					// a pageable copy returns only when the data is staged
					r.events[len(r.events)-2]["dur"] = end - r.events[len(r.events)-2]["ts"].(float64)
					r.host = end + 5
				}
			}
		}
		if f.Type == Hang {
			hangEnd = s.ranks[0].host + f.StallUs // peers time out long after the hung rank stops
		}
		hangHere := func(point int) {
			if f.Type == Hang && step == f.Step && f.Calls == point {
				s.ranks[f.Rank].stopped = true
			}
		}
		for l := range layers {
			for _, r := range s.ranks {
				s.compute(r, step, kNorm, 35)
				s.compute(r, step, kGemmQKV, 420)
				s.compute(r, step, kFlash, 310)
				s.compute(r, step, kGemmOut, 280)
				s.compute(r, step, kGelu, 45)
			}
			if l == layers/2 {
				hangHere(0)
			}
			s.collective(step, s.tpGroups(), tpBytes, tpBusGBps, "tp", hangEnd)
		}
		for range layers {
			for _, r := range s.ranks {
				s.compute(r, step, kGemmBwd, 600)
				s.compute(r, step, kGemmBwd, 560)
				s.compute(r, step, kGelu, 50)
			}
		}
		hangHere(1)
		s.collective(step, s.dpGroup(), dpBytes, dpBusGBps, "dp", hangEnd)
		for _, r := range s.ranks {
			if r.stopped {
				continue
			}
			s.compute(r, step, kAdam, 220)
			if lf, ok := s.fault(LaunchBound); ok && step >= lf.Step && (lf.Rank < 0 || r.rank == lf.Rank) {
				// an unfused per-parameter loop: each tiny kernel runs
				// shorter than its launch call
				for range lf.Calls {
					s.launch(r, "cudaLaunchKernel", "kernel", kTiny, compStream, 1.5+1.5*s.rng.Float64(), nil)
				}
			}
			// loss.item(): a small pinned copy whose call waits for the GPU
			_, end := s.launch(r, "cudaMemcpyAsync", "gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", compStream, 2, map[string]any{"bytes": 4})
			if hung := f.Type == Hang && step == f.Step; !hung {
				r.events[len(r.events)-2]["dur"] = end - r.events[len(r.events)-2]["ts"].(float64)
				r.host = end + 20
			} else {
				r.host = math.Max(r.host, end)
			}
		}
		for _, r := range s.ranks {
			end := r.host
			if r.stopped {
				// the hung rank's last recorded step ends with its last call
				end = 0
				for _, ev := range r.events {
					if ev["pid"] != 0 {
						end = math.Max(end, ev["ts"].(float64)+ev["dur"].(float64))
					}
				}
			}
			r.add(map[string]any{"ph": "X", "cat": "user_annotation", "name": fmt.Sprintf("ProfilerStep#%d", step),
				"pid": 1000 + r.rank, "tid": 1000 + r.rank, "ts": starts[r.rank], "dur": end - starts[r.rank]})
		}
	}
}

// write puts one trace per rank into dir, named as tensorboard_trace_handler
// names them (<worker>_<pid>.<unix ms>.pt.trace.json), each with its host in
// the host_name metadata some profiler wrappers add (the loader takes
// hosts from there, never from a file name).
func (s *sim) write(dir string) error {
	for _, r := range s.ranks {
		for _, ev := range r.events {
			// whole nanoseconds keep the traces small and exact
			ev["ts"] = math.Round(ev["ts"].(float64)*1000) / 1000
			if d, ok := ev["dur"].(float64); ok {
				ev["dur"] = math.Round(d*1000) / 1000
			}
		}
		doc := map[string]any{
			"schemaVersion":   1,
			"distributedInfo": map[string]any{"backend": "nccl", "rank": r.rank, "world_size": s.t.ranks},
			"deviceProperties": []map[string]any{{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_000_000_000,
				"computeMajor": 9, "computeMinor": 0, "numSms": 132}},
			"host_name":   hostName(r.rank / s.t.perHost),
			"traceEvents": r.events,
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%s_%d.%d.pt.trace.json", hostName(r.rank/s.t.perHost), 1000+r.rank, int64(1_700_000_000_000)+int64(r.rank))
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Generate writes the traces of one scenario into dir.
func Generate(dir string, t topology, f Fault, seed uint64) error {
	s := newSim(t, f, seed)
	s.run()
	return s.write(dir)
}
