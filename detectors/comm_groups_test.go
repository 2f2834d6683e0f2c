package detectors_test

import (
	"testing"

	"github.com/trainscope/trainscope/detectors"
)

// comm_groups sweeps, for each group and collective of a rank, only the
// compute that runs within the span of its collectives: compute that
// straddles either end of that span still hides part of them, compute
// that touches an end or lies outside hides nothing, and each group's
// compute counts for that group alone.
func TestCommGroupsExposedAtTheEdges(t *testing.T) {
	dir := t.TempDir()
	allGather := "ncclKernel_AllGather_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
	tpArgs := map[string]any{"Collective name": "allgather", "In msg nelems": 1024, "Out msg nelems": 2048,
		"Group size": 2, "dtype": "Float", "Process Group Name": "1", "Process Group Description": "tp_pg",
		"Process Group Ranks": "[0, 1]"}
	for rank := range 2 {
		b := newTrace(rank, 2)
		for s := range 3 {
			o := int64(s) * 1000
			b.Step(s+1, o, 1000)
			// the all-reduce [200, 400) of each step, on both ranks at once
			b.Launch("cudaLaunchKernel", o+10, 5, "kernel", allReduce, 20, o+200, 200, ncclArgs)
			b.Launch("cudaLaunchKernel", o+20, 5, "kernel", "gemm_before", 7, o+50, 90, nil)        // [50, 140): before it
			b.Launch("cudaLaunchKernel", o+30, 5, "kernel", "gemm_straddle_lo", 7, o+150, 100, nil) // [150, 250): 50 µs under it
			b.Launch("cudaLaunchKernel", o+40, 5, "kernel", "gemm_straddle_hi", 7, o+350, 100, nil) // [350, 450): 50 µs under it
			b.Launch("cudaLaunchKernel", o+50, 5, "kernel", "gemm_touch", 8, o+400, 80, nil)        // [400, 480): touches its end
			// the all-gather [700, 760) of another group, 20 µs of it under compute
			b.Launch("cudaLaunchKernel", o+60, 5, "kernel", allGather, 21, o+700, 60, tpArgs)
			b.Launch("cudaLaunchKernel", o+70, 5, "kernel", "gemm_tp", 7, o+720, 20, nil) // [720, 740)
		}
		b.Write(t, dir)
	}
	st, _ := analyzeDir(t, dir, uniq(t), detectors.Window{})
	// the default window holds steps 1 and 2: two calls of each
	for _, c := range []struct {
		subject string
		metric  string
		want    float64
	}{
		{"default_pg allreduce RING/LL via unknown transport", "calls", 2},
		{"default_pg allreduce RING/LL via unknown transport", "gpu_ns", 400 * us},
		// 200 µs a call, 100 of them under compute (both straddling kernels)
		{"default_pg allreduce RING/LL via unknown transport", "exposed_ns", 200 * us},
		{"tp_pg allgather RING/LL via unknown transport", "calls", 2},
		// 60 µs a call, 20 under compute
		{"tp_pg allgather RING/LL via unknown transport", "exposed_ns", 80 * us},
	} {
		for rank := range 2 {
			if got := metric(t, st, "comm_groups", rank, c.subject, c.metric); got != c.want {
				t.Errorf("rank %d %s %s = %v, want %v", rank, c.subject, c.metric, got, c.want)
			}
		}
	}
}
