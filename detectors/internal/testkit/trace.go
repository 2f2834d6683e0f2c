package testkit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Trace writes small Kineto traces whose numbers can be checked by
// hand. Times are microseconds from the builder's origin.
type Trace struct {
	Rank, World int
	Device      int    // the CUDA device its GPU work runs on
	Host        string // the trace's host_name metadata, when set
	Origin      int64  // µs since the epoch of time 0
	events      []map[string]any
	Corr        int // the last correlation id given
}

// NewTrace starts the trace of rank (of world ranks).
func NewTrace(rank, world int) *Trace {
	return &Trace{Rank: rank, World: world, Origin: 1_700_000_000_000_000}
}

// Add adds a raw event, its ts in µs from the origin.
func (b *Trace) Add(ev map[string]any) {
	ev["ts"] = b.Origin + ev["ts"].(int64)
	b.events = append(b.events, ev)
}

// Step adds the ProfilerStep#n annotation.
func (b *Trace) Step(n int, ts, dur int64) {
	b.Add(map[string]any{"ph": "X", "cat": "user_annotation", "name": fmt.Sprintf("ProfilerStep#%d", n),
		"pid": 100, "tid": 100, "ts": ts, "dur": dur})
}

// Launch adds a runtime call at (ts, dur) and the GPU activity it launches
// at (gts, gdur) on stream; cat is kernel, gpu_memcpy or gpu_memset.
func (b *Trace) Launch(api string, ts, dur int64, cat, name string, stream int, gts, gdur int64, args map[string]any) {
	b.Corr++
	b.Add(map[string]any{"ph": "X", "cat": "cuda_runtime", "name": api, "pid": 100, "tid": 100,
		"ts": ts, "dur": dur, "args": map[string]any{"correlation": b.Corr, "External id": b.Corr}})
	a := map[string]any{"device": b.Device, "stream": stream, "correlation": b.Corr, "External id": b.Corr}
	for k, v := range args {
		a[k] = v
	}
	b.Add(map[string]any{"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": gts, "dur": gdur, "args": a})
}

// Memory adds a [memory] instant with the allocator's totals on device 0.
func (b *Trace) Memory(ts, allocated, reserved int64) {
	b.Add(map[string]any{"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 100, "tid": 100, "ts": ts,
		"args": map[string]any{"Total Allocated": allocated, "Total Reserved": reserved, "Device Type": 1, "Device Id": 0, "Bytes": 1024}})
}

// Write writes the trace as dir/rank-N.pt.trace.json and returns its path.
func (b *Trace) Write(t testing.TB, dir string) string {
	t.Helper()
	doc := map[string]any{
		"schemaVersion":   1,
		"distributedInfo": map[string]any{"backend": "nccl", "rank": b.Rank, "world_size": b.World},
		"deviceProperties": []map[string]any{{"id": b.Device, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_000_000_000,
			"computeMajor": 9, "computeMinor": 0, "numSms": 132}},
		"traceEvents": b.events,
	}
	if b.Host != "" {
		doc["host_name"] = b.Host
	}
	raw, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("rank-%d.pt.trace.json", b.Rank))
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// AllReduce is an NCCL all-reduce kernel name.
const AllReduce = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"

// NCCLArgs are the arguments of a two-rank all-reduce on the default group.
var NCCLArgs = map[string]any{"Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576,
	"Group size": 2, "dtype": "Float", "Process Group Name": "0", "Process Group Description": "default_pg",
	"Process Group Ranks": "[0, 1]"}

// HandRun writes the two-rank run whose metrics the tests check by hand.
//
// Each of steps 1 and 2 (1000 µs apart) holds, on stream 7: K1 [100,300),
// K2 [310,400), K3 [720,800) and an HtoD pageable memcpy [850,860); on
// stream 20 an all-reduce that ends at 600 and starts at 350 on rank 0 and
// at 450 on rank 1 (rank 1 arrives 100 µs late). Step 3 holds one kernel
// that the default window (every step but the last) leaves out.
func HandRun(t testing.TB) string {
	dir := t.TempDir()
	for rank := range 2 {
		b := NewTrace(rank, 2)
		commStart := int64(350)
		if rank == 1 {
			commStart = 450
		}
		for s := range 2 {
			o := int64(s) * 1000
			b.Step(s+1, o, 1000)
			b.Launch("cudaLaunchKernel", o+10, 5, "kernel", "gemm_k1", 7, o+100, 200, nil)
			b.Launch("cudaLaunchKernel", o+20, 5, "kernel", "elementwise_k2", 7, o+310, 90, nil)
			b.Launch("cudaLaunchKernel", o+300, 5, "kernel", AllReduce, 20, o+commStart, 600-commStart, NCCLArgs)
			b.Launch("cudaLaunchKernel", o+700, 10, "kernel", "softmax_k3", 7, o+720, 80, nil)
			b.Launch("cudaMemcpyAsync", o+810, 20, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 7, o+850, 10, map[string]any{"bytes": 4096})
		}
		b.Step(3, 2000, 1000)
		b.Launch("cudaLaunchKernel", 2010, 5, "kernel", "gemm_k1", 7, 2100, 100, nil)
		b.Write(t, dir)
	}
	return dir
}
