package detectors_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/sql/duck"
)

// dataStallRun: three ranks, five 20 ms steps (the fifth is outside the
// window). Each step starts with the data loader for 400 µs and launches
// its first kernel 500 µs in, except rank 2's step 3, whose loader takes
// 30,400 µs (first launch at 30,500 µs) and rank 0's step 2, a 5 ms
// hiccup (first launch at 5,500 µs) that is under the 10 ms threshold.
// Times in µs.
func dataStallRun(t *testing.T) string {
	dir := t.TempDir()
	for rank := range 3 {
		b := newTrace(rank, 3)
		o := int64(0)
		for s := 1; s <= 5; s++ {
			lead, dur := int64(500), int64(20_000)
			switch {
			case rank == 2 && s == 3:
				lead, dur = 30_500, 50_000
			case rank == 0 && s == 2:
				lead, dur = 5_500, 25_000
			}
			b.Step(s, o, dur)
			b.Add(map[string]any{"ph": "X", "cat": "cpu_op", "name": loaderNext, "pid": 100, "tid": 100, "ts": o + 50, "dur": lead - 100})
			b.Launch("cudaLaunchKernel", o+lead, 5, "kernel", gemm, 7, o+lead+10, 15_000, nil)
			o += dur
		}
		b.Write(t, dir)
	}
	return dir
}

const loaderNext = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"

func TestDataStallNamesRankStepAndLoader(t *testing.T) {
	st, _ := analyzeDir(t, dataStallRun(t), "stall", detectors.Window{})
	checkDataStall(t, st)
}

// Without a step-time account (a database another reader or version
// wrote), the window's steps of the GPU work are searched: the same stall.
func TestDataStallWithoutAccount(t *testing.T) {
	st, _ := analyzeDir(t, dataStallRun(t), "stall_noacct", detectors.Window{})
	if err := st.Exec(context.Background(), "DELETE FROM step_account"); err != nil {
		t.Fatal(err)
	}
	runDetectors(t, st, detectors.Window{})
	checkDataStall(t, st)
}

func checkDataStall(t *testing.T, st *duck.Store) {
	t.Helper()
	rows, err := st.Query(context.Background(), `SELECT rank, step_lo, step_hi, value, message, evidence FROM findings WHERE detector = 'data_stall'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		var rank, lo, hi int
		var v float64
		var msg, evidence string
		if err := rows.Scan(&rank, &lo, &hi, &v, &msg, &evidence); err != nil {
			t.Fatal(err)
		}
		// leads over ranks x steps 1-4: ten of 500 µs, one of 5,500, one of
		// 30,500: median 500 µs, so rank 2's step 3 is 30,000 µs over it
		if rank != 2 || lo != 3 || hi != 3 || v != 30_000*us {
			t.Errorf("data_stall: rank %d steps %d-%d excess %v; want rank 2, step 3, %v", rank, lo, hi, v, 30_000*us)
		}
		if !strings.Contains(msg, "enumerate(DataLoader)") || !strings.Contains(msg, "step 3") {
			t.Errorf("message lacks the loader or the step: %s", msg)
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(evidence), &ev); err != nil || ev["median_lead_ns"] != 500*us || ev["median_step_ns"] != 20_000*us {
			t.Errorf("evidence %s (%v)", evidence, err)
		}
	}
	if n != 1 {
		t.Fatalf("%d data_stall findings, want 1 (rank 2)", n)
	}
}
