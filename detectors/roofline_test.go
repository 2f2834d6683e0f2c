package detectors_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/detectors/report/html"
)

const (
	gemmKernel = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
	// the slow GEMM's shapes: bias [4096] + [8192,4096]·[4096,4096] in bf16,
	// 2·8192·4096·4096 = 274.88 GFLOP, 277.8 µs at H100's 989.4 TFLOP/s
	slowShape = "[[4096],[8192,4096],[4096,4096]]"
)

// rooflineRun: one H100 rank, four steps of 3 ms (the window is steps
// 1-3). Each step runs, on stream 7:
//   - aten::mm [4096,4096]·[4096,4096] bf16 (137.4 GFLOP, 138.9 µs at
//     peak) as a 200 µs kernel: 69% of its roofline
//   - aten::addmm of slowShape as a 400·slow µs kernel: 69% at slow 1
//   - aten::add of two [8192,4096] bf16 tensors (201 MB, 60 µs at 3.35
//     TB/s) as an 80 µs kernel: memory-bound at 75%
//   - eight aten::mul of 64 elements, 3 µs kernels each: latency-bound,
//     far below the roof but 24 µs a step, too little to report
func rooflineRun(t *testing.T, slow float64) string {
	dir := t.TempDir()
	b := newTrace(0, 1)
	bf := []string{"c10::BFloat16", "c10::BFloat16", "c10::BFloat16"}
	for s := range 4 {
		base := int64(s) * 3000
		b.Step(s+1, base, 3000)
		op := func(name string, ts, dur int64, dims any, types []string) {
			b.Add(map[string]any{"ph": "X", "cat": "cpu_op", "name": name, "pid": 100, "tid": 100, "ts": ts, "dur": dur,
				"args": map[string]any{"External id": 90000 + int(ts), "Input Dims": dims, "Input type": types}})
		}
		gts := base + 50
		op("aten::mm", base+10, 20, [][]int{{4096, 4096}, {4096, 4096}}, bf)
		b.Launch("cudaLaunchKernel", base+15, 5, "kernel", gemmKernel, 7, gts, 200, nil)
		gts += 200
		slowDur := int64(400 * slow)
		op("aten::addmm", base+40, 20, [][]int{{4096}, {8192, 4096}, {4096, 4096}, {}, {}}, append(bf, "Scalar", "Scalar"))
		b.Launch("cudaLaunchKernel", base+45, 5, "kernel", gemmKernel, 7, gts, slowDur, nil)
		gts += slowDur
		op("aten::add", base+70, 10, [][]int{{8192, 4096}, {8192, 4096}, {}}, append(bf[:2:2], "Scalar"))
		b.Launch("cudaLaunchKernel", base+72, 5, "kernel", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>", 7, gts, 80, nil)
		gts += 80
		for i := range int64(8) {
			op("aten::mul", base+90+10*i, 8, [][]int{{64}, {}}, []string{"c10::BFloat16", "Scalar"})
			b.Launch("cudaLaunchKernel", base+91+10*i, 5, "kernel", "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<c10::BFloat16>>", 7, gts+2, 3, nil)
			gts += 5
		}
	}
	b.Write(t, dir)
	return dir
}

func TestRooflineByHand(t *testing.T) {
	st, _ := analyzeDir(t, rooflineRun(t, 1), "roof", detectors.Window{})
	gemm := 2.0 * 8192 * 4096 * 4096 / 989.4e12 * 1e9 // ns at peak
	subject := "aten::addmm " + slowShape + " bf16, compute-bound"
	for _, c := range []struct {
		detector, subject, metric string
		want, tol                 float64
	}{
		{"roofline_shapes", subject, "calls", 3, 0},
		{"roofline_shapes", subject, "time_ns", 3 * 400 * us, 0},
		{"roofline_shapes", subject, "roof_pct", 100 * gemm / (400 * us), 0.01},
		{"roofline_shapes", subject, "saved_ns", 3 * (400*us - gemm), 1},
		{"roofline_shapes", subject, "achieved_tflops", 2.0 * 8192 * 4096 * 4096 / 400e-6 / 1e12, 0.01},
		// add: 3·8192·4096·2 bytes in 80 µs
		{"roofline_shapes", "aten::add [[8192,4096],[8192,4096]] bf16, memory-bound", "achieved_tbs", 3 * 8192 * 4096 * 2 / 80e-6 / 1e12, 0.001},
		{"roofline_shapes", "aten::mul [[64]] bf16, latency-bound", "calls", 24, 0},
		{"roofline", "gemm", "calls", 6, 0},
		{"roofline", "gemm", "compute_bound_pct", 100, 0},
		{"roofline", "elementwise", "latency_bound_pct", 100 * 24 * 3 / (24*3 + 3*80.0), 0.01},
		// every compute kernel of the window belongs to a modelled operator
		{"roofline", "all", "coverage_pct", 100, 0},
	} {
		if got := metric(t, st, c.detector, nil, c.subject, c.metric); math.Abs(got-c.want) > c.tol {
			t.Errorf("%s %s %s = %v, want %v", c.detector, c.subject, c.metric, got, c.want)
		}
	}
	var n int
	if err := st.Conn().QueryRowContext(context.Background(), `SELECT count(*) FROM findings WHERE detector IN ('below_roofline', 'memory_bound_ops')`).Scan(&n); err != nil || n != 0 {
		t.Errorf("healthy run: %d roofline findings (%v), want none: GEMMs at 69%% and an add at 75%% of their roofs, and 24 µs of tiny kernels a step", n, err)
	}
}

// One GEMM given 4x its duration: the verdict names it far below its
// roofline, and the root causes rank the time it would save.
func TestSlowGEMMBelowRoofline(t *testing.T) {
	st, res := analyzeDir(t, rooflineRun(t, 4), "roof", detectors.Window{})
	rep, err := detectors.BuildReport(context.Background(), st, res)
	if err != nil {
		t.Fatal(err)
	}
	gemm := 2.0 * 8192 * 4096 * 4096 / 989.4e12 * 1e9
	var found *report.Finding
	for i, f := range rep.Findings {
		if f.Detector == "below_roofline" {
			if found != nil {
				t.Errorf("a second below_roofline finding: %s", f.Message)
			}
			found = &rep.Findings[i]
		}
	}
	if found == nil {
		t.Fatal("no below_roofline finding")
	}
	if !strings.HasPrefix(found.Subject, "aten::addmm "+slowShape+" bf16") || found.Value == nil || math.Abs(*found.Value-gemm/(1600*us)) > 1e-3 {
		t.Errorf("below_roofline names %q at %v, want the addmm at %.4f", found.Subject, found.Value, gemm/(1600*us))
	}
	if !strings.Contains(found.Message, "compute-bound") || !strings.Contains(found.Message, "shapes are aligned") {
		t.Errorf("message: %s", found.Message)
	}
	if len(rep.Causes) == 0 || rep.Causes[0].Kind != "slow_kernel" {
		t.Fatalf("causes: %+v, want the slow kernel first", rep.Causes)
	}
	c := rep.Causes[0]
	if want := 1600*us - gemm; math.Abs(c.CostNS-want) > 1 {
		t.Errorf("slow_kernel cost %v a step, want %v (1600 µs less its 277.8 µs at the roofline)", c.CostNS, want)
	}
	if len(c.Shown) != 1 || c.Shown[0] != found.ID {
		t.Errorf("cause shown by %v, want %s", c.Shown, found.ID)
	}
}

// The HTML report draws the roofline: the GPU's roofs and a dot per
// unique call, the slow GEMM among them with its share of the roofline.
func TestRooflineChart(t *testing.T) {
	st, res := analyzeDir(t, rooflineRun(t, 4), "roof", detectors.Window{})
	rep, err := detectors.BuildReport(context.Background(), st, res)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Charts("roof")
	if c == nil || c.Roofline == nil {
		t.Fatal("no roofline chart")
	}
	if c.Roofline.GPU != "H100-SXM" || c.Roofline.Peaks["bf16"] != 989.4 || c.Roofline.BWTBs != 3.35 {
		t.Errorf("roofs: %+v", c.Roofline)
	}
	var page strings.Builder
	if err := html.Write(&page, rep); err != nil {
		t.Fatal(err)
	}
	pg := page.String()
	for _, want := range []string{`data-chart="roofline"`, "aten::addmm " + slowShape + " bf16: ", "% of its roofline", "BF16 989"} {
		if !strings.Contains(pg, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// the two GEMMs and the add are drawn; the tiny muls' 64 FLOPs round
	// to 0.00 TFLOP/s, which a log axis cannot show
	if n := strings.Count(pg, "<circle"); n != len(c.Roofline.Points) || n != 3 || c.Roofline.Skipped != 1 {
		t.Errorf("%d dots for %d points", n, len(c.Roofline.Points))
	}
}

// The real H100 trace (TraceLens' Qwen1.5-0.5B): its top unique calls,
// worked by hand from their recorded shapes and the trace's kernel times.
func TestRooflineOnQwenTrace(t *testing.T) {
	st, _ := analyzeDir(t, corpusDir("tracelens/tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")(t), "qwen", detectors.Window{})
	for _, c := range []struct {
		name, shape  string
		calls        int64
		flops, bytes int64
	}{
		// 48 x mm [8944,1024]·[1024,2816]: 2·8944·1024·2816 FLOPs;
		// (8944·1024 + 1024·2816 + 8944·2816)·2 bytes
		{"aten::mm", "[[8944,1024],[1024,2816]]", 48, 48 * 2 * 8944 * 1024 * 2816, 48 * (8944*1024 + 1024*2816 + 8944*2816) * 2},
		// 24 x causal flash attention [16,559,16,64]: half of
		// 4·16·16·559²·64; q, k, v, out read or written once in bf16
		{"aten::_flash_attention_forward", "[[16,559,16,64],[16,559,16,64],[16,559,16,64]]", 24, 24 * 4 * 16 * 16 * 559 * 559 * 64 / 2, 24 * 4 * 16 * 559 * 16 * 64 * 2},
		// 96 x RoPE's mul, [16,16,559,64] by a broadcast [1,1,559,64]
		{"aten::mul", "[[16,16,559,64],[1,1,559,64]]", 96, 96 * 16 * 16 * 559 * 64, 96 * ((16*16*559*64+559*64)*2 + 16*16*559*64*2)},
		// 72 x addmm, bias [1024] + [8944,1024]·[1024,1024]
		{"aten::addmm", "[[1024],[8944,1024],[1024,1024]]", 72, 72 * 2 * 8944 * 1024 * 1024, 72 * (1024 + 8944*1024 + 1024*1024 + 8944*1024) * 2},
		// 72 x copy_ of [16,16,559,64] bf16: read and written
		{"aten::copy_", "[[16,16,559,64],[16,16,559,64]]", 72, 0, 72 * 2 * 16 * 16 * 559 * 64 * 2},
	} {
		var calls, flops, bytes, gpuNS int64
		var tflops float64
		err := st.Conn().QueryRowContext(context.Background(), `SELECT calls, flops, bytes, gpu_ns, flops / (gpu_ns / 1e9) / 1e12
			FROM op_roofline_shapes WHERE name = ? AND op_shape = ?`, c.name, c.shape).Scan(&calls, &flops, &bytes, &gpuNS, &tflops)
		if err != nil {
			t.Errorf("%s %s: %v", c.name, c.shape, err)
			continue
		}
		if calls != c.calls || flops != c.flops || bytes != c.bytes {
			t.Errorf("%s %s: %d calls, %d FLOPs, %d bytes; want %d, %d, %d", c.name, c.shape, calls, flops, bytes, c.calls, c.flops, c.bytes)
		}
		if gpuNS <= 0 || tflops > 989.4 {
			t.Errorf("%s: %d ns, %.1f TFLOP/s: above the H100's peak", c.name, gpuNS, tflops)
		}
	}
}
