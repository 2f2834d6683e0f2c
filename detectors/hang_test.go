package detectors_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
)

// hangRun: two ranks share an allreduce per step. In step 2 rank 1 stops
// after one kernel and never enters the allreduce; rank 0 enters it and
// waits 2.4 s (the NCCL timeout's work). Times in µs.
func hangRun(t *testing.T) string {
	dir := t.TempDir()
	r0, r1 := newTrace(0, 2), newTrace(1, 2)
	for _, b := range []*traceBuilder{r0, r1} {
		b.Step(1, 0, 1000)
		b.Launch("cudaLaunchKernel", 100, 10, "kernel", gemm, 7, 120, 300, nil)
		b.Launch("cudaLaunchKernel", 450, 10, "kernel", allReduce, 20, 500, 100, ncclArgs)
	}
	r0.Step(2, 1000, 2_500_000)
	r0.Launch("cudaLaunchKernel", 1100, 10, "kernel", gemm, 7, 1120, 300, nil)
	r0.Launch("cudaLaunchKernel", 1450, 10, "kernel", allReduce, 20, 1500, 2_400_000, ncclArgs)
	r1.Step(2, 1000, 200)
	r1.Launch("cudaLaunchKernel", 1040, 10, "kernel", gemm, 7, 1050, 100, nil)
	r0.Write(t, dir)
	r1.Write(t, dir)
	return dir
}

func TestHangNamesTheRankAndTheCollective(t *testing.T) {
	st, _ := analyzeDir(t, hangRun(t), "hang", detectors.Window{})
	rows, err := st.Query(context.Background(), `SELECT rank, step_lo, subject, value, message, evidence FROM findings WHERE detector = 'hang' ORDER BY rank`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		var rank, step int
		var subject, msg, evidence string
		var stall float64
		if err := rows.Scan(&rank, &step, &subject, &stall, &msg, &evidence); err != nil {
			t.Fatal(err)
		}
		// rank 1's step 2 ends at 1200 µs, rank 0's at 2,501,000 µs
		if rank != 1 || step != 2 || subject != "allreduce" || stall != (2_501_000-1200)*us {
			t.Errorf("hang: rank %d step %d subject %q stall %v; want rank 1, step 2, allreduce, %v", rank, step, subject, stall, (2_501_000-1200)*us)
		}
		for _, want := range []string{"rank 1 stopped", "entered 1 collective(s)", "never entered #2", "which ranks 0 did", "waited up to 2.40 s"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message lacks %q: %s", want, msg)
			}
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(evidence), &ev); err != nil || ev["peers_entered"] != 2.0 || ev["collectives_entered"] != 1.0 {
			t.Errorf("evidence %s (%v)", evidence, err)
		}
	}
	if n != 1 {
		t.Fatalf("%d hang findings, want 1 (rank 1)", n)
	}
}

// The hand run (both ranks finish every step) has no hang; neither has the
// hang run with a threshold above the stall.
func TestHangQuietWhenNoRankStops(t *testing.T) {
	for name, c := range map[string]struct {
		dir string
		cfg detectors.Config
	}{
		"healthy":         {handRun(t), detectors.Config{}},
		"stall under 3 s": {hangRun(t), detectors.Config{Thresholds: map[string]map[string]float64{"hang": {"min_stall_ns": 3e9}}}},
	} {
		st, _ := analyzeDir(t, c.dir, "q", detectors.Window{}, c.cfg)
		var n int
		if err := st.Conn().QueryRowContext(context.Background(), `SELECT count(*) FROM findings WHERE detector = 'hang'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s: %d hang findings", name, n)
		}
	}
}
