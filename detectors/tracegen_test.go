package detectors_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// traceBuilder writes small Kineto traces whose numbers can be checked by
// hand. Times are microseconds from the builder's origin.
type traceBuilder struct {
	rank, world int
	device      int    // the CUDA device its GPU work runs on
	host        string // the trace's host_name metadata, when set
	origin      int64  // µs since the epoch of time 0
	events      []map[string]any
	corr        int
}

func newTrace(rank, world int) *traceBuilder {
	return &traceBuilder{rank: rank, world: world, origin: 1_700_000_000_000_000}
}

func (b *traceBuilder) add(ev map[string]any) {
	ev["ts"] = b.origin + ev["ts"].(int64)
	b.events = append(b.events, ev)
}

func (b *traceBuilder) step(n int, ts, dur int64) {
	b.add(map[string]any{"ph": "X", "cat": "user_annotation", "name": fmt.Sprintf("ProfilerStep#%d", n),
		"pid": 100, "tid": 100, "ts": ts, "dur": dur})
}

// launch adds a runtime call at (ts, dur) and the GPU activity it launches
// at (gts, gdur) on stream; cat is kernel, gpu_memcpy or gpu_memset.
func (b *traceBuilder) launch(api string, ts, dur int64, cat, name string, stream int, gts, gdur int64, args map[string]any) {
	b.corr++
	b.add(map[string]any{"ph": "X", "cat": "cuda_runtime", "name": api, "pid": 100, "tid": 100,
		"ts": ts, "dur": dur, "args": map[string]any{"correlation": b.corr, "External id": b.corr}})
	a := map[string]any{"device": b.device, "stream": stream, "correlation": b.corr, "External id": b.corr}
	for k, v := range args {
		a[k] = v
	}
	b.add(map[string]any{"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": gts, "dur": gdur, "args": a})
}

// memory adds a [memory] instant with the allocator's totals on device 0.
func (b *traceBuilder) memory(ts, allocated, reserved int64) {
	b.add(map[string]any{"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 100, "tid": 100, "ts": ts,
		"args": map[string]any{"Total Allocated": allocated, "Total Reserved": reserved, "Device Type": 1, "Device Id": 0, "Bytes": 1024}})
}

func (b *traceBuilder) write(t *testing.T, dir string) string {
	t.Helper()
	doc := map[string]any{
		"schemaVersion":   1,
		"distributedInfo": map[string]any{"backend": "nccl", "rank": b.rank, "world_size": b.world},
		"deviceProperties": []map[string]any{{"id": b.device, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_000_000_000,
			"computeMajor": 9, "computeMinor": 0, "numSms": 132}},
		"traceEvents": b.events,
	}
	if b.host != "" {
		doc["host_name"] = b.host
	}
	raw, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("rank-%d.pt.trace.json", b.rank))
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const allReduce = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"

var ncclArgs = map[string]any{"Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576,
	"Group size": 2, "dtype": "Float", "Process Group Name": "0", "Process Group Description": "default_pg",
	"Process Group Ranks": "[0, 1]"}

// handRun writes the two-rank run whose metrics the tests check by hand.
//
// Each of steps 1 and 2 (1000 µs apart) holds, on stream 7: K1 [100,300),
// K2 [310,400), K3 [720,800) and an HtoD pageable memcpy [850,860); on
// stream 20 an all-reduce that ends at 600 and starts at 350 on rank 0 and
// at 450 on rank 1 (rank 1 arrives 100 µs late). Step 3 holds one kernel
// that the default window (every step but the last) leaves out.
func handRun(t *testing.T) string {
	dir := t.TempDir()
	for rank := range 2 {
		b := newTrace(rank, 2)
		commStart := int64(350)
		if rank == 1 {
			commStart = 450
		}
		for s := range 2 {
			o := int64(s) * 1000
			b.step(s+1, o, 1000)
			b.launch("cudaLaunchKernel", o+10, 5, "kernel", "gemm_k1", 7, o+100, 200, nil)
			b.launch("cudaLaunchKernel", o+20, 5, "kernel", "elementwise_k2", 7, o+310, 90, nil)
			b.launch("cudaLaunchKernel", o+300, 5, "kernel", allReduce, 20, o+commStart, 600-commStart, ncclArgs)
			b.launch("cudaLaunchKernel", o+700, 10, "kernel", "softmax_k3", 7, o+720, 80, nil)
			b.launch("cudaMemcpyAsync", o+810, 20, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 7, o+850, 10, map[string]any{"bytes": 4096})
		}
		b.step(3, 2000, 1000)
		b.launch("cudaLaunchKernel", 2010, 5, "kernel", "gemm_k1", 7, 2100, 100, nil)
		b.write(t, dir)
	}
	return dir
}

// uniq returns a short string that differs per test, for run ids.
func uniq(t *testing.T) string {
	return strings.ReplaceAll(strings.ToLower(t.Name()), "/", "_")
}
