package detectors_test

import (
	"context"
	"math"
	"testing"

	"github.com/trainscope/trainscope/detectors"
)

// mfuRun: one H100 rank. Each of two steps runs an aten::mm of
// [4096, 4096] x [4096, 4096] in bf16 (2·4096³ = 137.44 GFLOP) as one 200 µs
// kernel, then a 700 µs elementwise kernel; step 3 closes the window.
func mfuRun(t *testing.T) string {
	dir := t.TempDir()
	b := newTrace(0, 1)
	for s := range 3 {
		base := int64(s) * 1000
		b.Step(s+1, base, 1000)
		// the operator, then its launch and kernel with the same External id
		b.Add(map[string]any{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 100, "ts": base + 10, "dur": 30,
			"args": map[string]any{"External id": b.Corr + 1, "Input Dims": [][]int{{4096, 4096}, {4096, 4096}},
				"Input type": []string{"c10::BFloat16", "c10::BFloat16"}}})
		b.Launch("cudaLaunchKernel", base+20, 10, "kernel", gemm, 7, base+50, 200, nil)
		b.Launch("cudaLaunchKernel", base+40, 10, "kernel", "vectorized_elementwise_kernel", 7, base+250, 700, nil)
	}
	b.Write(t, dir)
	return dir
}

func TestMFUByHand(t *testing.T) {
	st, _ := analyzeDir(t, mfuRun(t), "mfu", detectors.Window{},
		detectors.Config{Thresholds: map[string]map[string]float64{"low_mfu": {"min_tflop": 0.1}}})
	const flop = 2.0 * 4096 * 4096 * 4096 // per step; steps 1-2 are in the window
	ideal := 2 * flop / 989.4e12          // seconds at H100 bf16 peak
	span := 1900e-6                       // first kernel 50 µs .. last end 1950 µs
	for _, c := range []struct {
		metric string
		want   float64
		tol    float64
	}{
		{"ops", 2, 0},
		{"tflop", math.Round(2*flop/1e12*1000) / 1000, 1e-9},
		{"mfu_pct", 100 * ideal / span, 0.01},
		{"matmul_kernel_ns", 400 * us, 0},
		{"matmul_time_pct", 100 * 400e-6 / span, 0.01},
		{"matmul_pct_of_peak", 100 * ideal / 400e-6, 0.01},
	} {
		if got := metric(t, st, "mfu", 0, nil, c.metric); math.Abs(got-c.want) > c.tol {
			t.Errorf("mfu %s = %v, want %v", c.metric, got, c.want)
		}
	}
	var subject string
	var value float64
	if err := st.Conn().QueryRowContext(context.Background(), `SELECT subject, value FROM findings WHERE detector = 'low_mfu'`).Scan(&subject, &value); err != nil {
		t.Fatalf("no low_mfu finding: %v", err)
	}
	// matmuls at 69% of peak but 21% of the span: the loss is around them
	if subject != "around the matmul kernels" || math.Abs(value-ideal/span) > 1e-4 {
		t.Errorf("low_mfu = %q %v, want around the matmul kernels, %v", subject, value, ideal/span)
	}
}
