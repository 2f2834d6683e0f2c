package detectors_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
)

// ncuDetails writes an ncu --page details export of one launch per
// kernel: name -> metrics (section, name, unit, value).
func ncuDetails(t *testing.T, path string, kernels []string, metrics map[string][][4]string) {
	t.Helper()
	var b strings.Builder
	b.WriteString(`"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"` + "\n")
	for id, k := range kernels {
		for _, m := range metrics[k] {
			if strings.HasPrefix(m[1], "rule:") {
				fmt.Fprintf(&b, "\"%d\",\"1\",\"python3\",\"node\",\"%s\",\"1\",\"7\",\"(128, 1, 1)\",\"(264, 1, 1)\",\"0\",\"9.0\",\"%s\",\"\",\"\",\"\",\"%s\",\"OPT\",\"%s\",\"global\",\"40.5\"\n",
					id, k, m[0], strings.TrimPrefix(m[1], "rule:"), m[3])
				continue
			}
			// metric rows stop at the value, as real exports' do
			fmt.Fprintf(&b, "\"%d\",\"1\",\"python3\",\"node\",\"%s\",\"1\",\"7\",\"(128, 1, 1)\",\"(264, 1, 1)\",\"0\",\"9.0\",\"%s\",\"%s\",\"%s\",\"%s\",\n", id, k, m[0], m[1], m[2], m[3])
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A trace whose GEMM kernel Nsight Compute profiled at 20% of compute and
// 15% of memory throughput, its occupancy capped by registers: the
// finding names it with the trace's time in it; a second profiled kernel
// near its compute roof is not reported.
func TestKernelLimitsFromNCU(t *testing.T) {
	dir := rooflineRun(t, 1)
	sol := func(c, m string) [][4]string {
		return [][4]string{
			{"GPU Speed Of Light Throughput", "Duration", "usecond", "201.50"},
			{"GPU Speed Of Light Throughput", "Compute (SM) Throughput", "%", c},
			{"GPU Speed Of Light Throughput", "Memory Throughput", "%", m},
		}
	}
	slow := append(sol("20.10", "15.40"),
		[4]string{"Launch Statistics", "Registers Per Thread", "register/thread", "168"},
		[4]string{"Occupancy", "Block Limit Registers", "block", "2"},
		[4]string{"Occupancy", "Block Limit Shared Mem", "block", "8"},
		[4]string{"Occupancy", "Block Limit Warps", "block", "16"},
		[4]string{"Occupancy", "Theoretical Occupancy", "%", "12.50"},
		[4]string{"Occupancy", "Achieved Occupancy", "%", "11.90"},
		[4]string{"Occupancy", "rule:TheoreticalOccupancy", "", "This kernel's theoretical occupancy (12.5%) is limited by the number of required registers."})
	fast := append(sol("88.00", "35.00"), [4]string{"Occupancy", "Theoretical Occupancy", "%", "50"})
	add := "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>"
	ncuDetails(t, filepath.Join(dir, "gemm.ncu.csv"), []string{gemmKernel, add}, map[string][][4]string{gemmKernel: slow, add: fast})

	// and a --page raw export of a kernel the trace does not run, with the
	// per-reason stall metrics
	fill := "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"
	raw := `"ID","Kernel Name","Grid Size","sm__throughput.avg.pct_of_peak_sustained_elapsed","gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed","smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio","smsp__average_warp_latency_issue_stalled_barrier.ratio","smsp__average_warp_latency_issue_stalled_not_selected.ratio"
"","","","%","%","","",""
"0","` + fill + `","(2,048, 1, 1)","12.00","30.50","40.10","3.20","90.00"
`
	if err := os.WriteFile(filepath.Join(dir, "fill.ncu.csv"), []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	st, res := analyzeDir(t, dir, "ncu", detectors.Window{})
	for _, r := range res {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Detector.Name, r.Err)
		}
	}
	// the trace runs the GEMM kernel twice a step for steps 1-3: 3·(200+400) µs
	if got := metric(t, st, "kernel_sol", nil, gemmKernel, "trace_ns"); got != 3*600*us {
		t.Errorf("kernel_sol trace_ns = %v, want %v", got, 3*600*us)
	}
	if got := metric(t, st, "kernel_sol", nil, gemmKernel, "sol_compute_pct"); got != 20.1 {
		t.Errorf("kernel_sol sol_compute_pct = %v", got)
	}
	rows, err := st.Query(context.Background(), `SELECT subject, message, impact FROM findings WHERE detector = 'kernel_limits'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var s, m, i string
		if err := rows.Scan(&s, &m, &i); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
		wants := []string{"20% of compute and 15% of memory throughput", "capped by registers (168 per thread)", "ncu hints: TheoreticalOccupancy"}
		impact := "1.80 ms of GPU time in the trace (6 calls)"
		if s == fill {
			wants = []string{"12% of compute and 30% of memory throughput", "Its warps stall most on long scoreboard."}
			impact = "the trace has no kernel of this name"
		}
		for _, want := range wants {
			if !strings.Contains(m, want) {
				t.Errorf("message lacks %q: %s", want, m)
			}
		}
		if i != impact {
			t.Errorf("impact %q, want %q", i, impact)
		}
	}
	// the trace's GEMM first, then the kernel only the export has; not the
	// add near its compute roof
	if len(got) != 2 || got[0] != gemmKernel || got[1] != fill {
		t.Errorf("kernel_limits on %q, want the GEMM, then the fill", got)
	}
}

// Where Nsight Compute measured a call's kernel, its bound replaces the
// modelled one: the slow GEMM that the roofline calls compute-bound is
// latency-bound by measurement (20% and 15% of speed of light).
func TestMeasuredBoundReplacesModelled(t *testing.T) {
	dir := rooflineRun(t, 4)
	ncuDetails(t, filepath.Join(dir, "gemm.ncu.csv"), []string{gemmKernel}, map[string][][4]string{gemmKernel: {
		{"GPU Speed Of Light Throughput", "Compute (SM) Throughput", "%", "20.10"},
		{"GPU Speed Of Light Throughput", "Memory Throughput", "%", "15.40"},
	}})
	st, _ := analyzeDir(t, dir, "ncu", detectors.Window{})
	measured := "aten::addmm " + slowShape + " bf16, latency-bound"
	if got := metric(t, st, "roofline_shapes", nil, measured, "ncu_sol_compute_pct"); got != 20.1 {
		t.Errorf("ncu_sol_compute_pct = %v", got)
	}
	var msg string
	if err := st.Conn().QueryRowContext(context.Background(), `SELECT message FROM findings WHERE detector = 'below_roofline'`).Scan(&msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "Nsight Compute measured its kernel at 20% of compute and 15% of memory speed of light") {
		t.Errorf("below_roofline: %s", msg)
	}
}
