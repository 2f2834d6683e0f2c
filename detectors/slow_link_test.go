package detectors_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
)

// slowLinkRun: eight ranks in four two-rank "tp" groups, three steps in the
// window (a fourth, outside it, holds one kernel). Each step every group
// all-reduces 1 Mi floats (4 MiB; bus factor 2(n-1)/n = 1 for n = 2). The
// transfer, timed from the last member's arrival, takes 100 µs in groups
// [0, 1] and [6, 7], 110 µs in [2, 3] and slowXfer µs in [4, 5]. In [0, 1]
// rank 1 arrives 50 µs late, so rank 0's kernel runs 150 µs: the detector
// must not read that wait as a slow link.
func slowLinkRun(t *testing.T, slowXfer int64) string {
	return linkRun(t, []int64{100, 110, slowXfer, 100}, 3, true)
}

// linkRun writes tensor-parallel groups of two ranks, group g's transfer
// taking xfer[g] µs from its last member's arrival, over steps steps (and
// a last one of compute only, outside the default window, when tail); in
// group [0, 1] rank 0 waits 50 µs for rank 1.
func linkRun(t *testing.T, xfer []int64, steps int, tail bool) string {
	return linkRunOn(t, xfer, steps, tail, nil)
}

// linkRunOn is linkRun with place, when not nil, called on each rank's
// trace before its events are added (to set its host and device).
func linkRunOn(t *testing.T, xfer []int64, steps int, tail bool, place func(*traceBuilder)) string {
	dir := t.TempDir()
	world := 2 * len(xfer)
	for rank := range world {
		g := rank / 2
		args := map[string]any{"Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576,
			"Group size": 2, "dtype": "Float", "Process Group Name": fmt.Sprint(g + 1), "Process Group Description": "tp",
			"Process Group Ranks": fmt.Sprintf("[%d, %d]", 2*g, 2*g+1)}
		b := newTrace(rank, world)
		if place != nil {
			place(b)
		}
		for s := range steps {
			o := int64(s) * 1000
			b.Step(s+1, o, 1000)
			b.Launch("cudaLaunchKernel", o+10, 5, "kernel", gemm, 7, o+20, 200, nil)
			start := o + 300
			if rank == 0 {
				start = o + 250 // waits 50 µs for rank 1
			}
			b.Launch("cudaLaunchKernel", o+240, 5, "kernel", allReduce, 20, start, o+300+xfer[g]-start, args)
		}
		if tail {
			o := int64(steps) * 1000
			b.Step(steps+1, o, 1000)
			b.Launch("cudaLaunchKernel", o+10, 5, "kernel", gemm, 7, o+20, 200, nil)
		}
		b.Write(t, dir)
	}
	return dir
}

func TestSlowLinkNamesTheGroup(t *testing.T) {
	st, _ := analyzeDir(t, slowLinkRun(t, 200), "slowlink", detectors.Window{})
	rows, err := st.Query(context.Background(), `SELECT subject, value, threshold, message FROM findings WHERE detector = 'slow_link'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		var subject, msg string
		var drop, thr float64
		if err := rows.Scan(&subject, &drop, &thr, &msg); err != nil {
			t.Fatal(err)
		}
		// bus bandwidths B/100, B/110, B/200, B/100 µs (B = 4 MiB): the
		// median of the four is B·21/2200, so [4, 5] is 1 - (1/200)/(21/2200)
		// = 10/21 below it; MAD = |B/100 - median| = B/2200 (under the 5%
		// floor B·21/44000), so z = (21/2200 - 11/2200) / (21/44000) = 9.52
		if subject != "tp [4, 5] allreduce" || math.Abs(drop-10.0/21) > 1e-9 || thr != 0.20 {
			t.Errorf("slow_link: subject %q drop %v threshold %v; want tp [4, 5] allreduce, %v, 0.20", subject, drop, thr, 10.0/21)
		}
		t.Log(msg)
	}
	if n != 1 {
		t.Fatalf("%d slow_link findings, want 1", n)
	}
}

// Equal links: the 110 µs group is 5% off the median and rank 0's wait is
// no transfer, so nothing is reported.
func TestSlowLinkQuietOnHealthyGroups(t *testing.T) {
	st, _ := analyzeDir(t, slowLinkRun(t, 100), "slowlink_ok", detectors.Window{})
	var n int
	if err := st.Conn().QueryRowContext(context.Background(), `SELECT count(*) FROM findings WHERE detector = 'slow_link'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d slow_link findings on healthy groups", n)
	}
}

// Two groups of a kind have no z-score: the slower is a slow link when it
// reaches under 1 - 2 x min_drop of the faster one's bandwidth.
func TestSlowLinkOfTwoGroups(t *testing.T) {
	for _, c := range []struct {
		slow int64 // µs of [2, 3]'s transfer; [0, 1] takes 100 (rank 0 waits 50 for rank 1)
		want int
	}{{250, 1}, {150, 0}} {
		dir := linkRun(t, []int64{100, c.slow}, 4, false)
		st, _ := analyzeDir(t, dir, fmt.Sprintf("twogroups%d", c.slow), detectors.Window{})
		rows, err := st.Query(context.Background(), `SELECT subject, value, message FROM findings WHERE detector = 'slow_link'`)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
			var subject, msg string
			var drop float64
			if err := rows.Scan(&subject, &drop, &msg); err != nil {
				t.Fatal(err)
			}
			// B/250 against B/100: 60% below the faster group
			if subject != "tp [2, 3] allreduce" || math.Abs(drop-0.6) > 1e-9 || !strings.Contains(msg, "the only other allreduce group") {
				t.Errorf("slow_link %q drop %v: %s", subject, drop, msg)
			}
		}
		rows.Close()
		if n != c.want {
			t.Errorf("[2, 3] at %d µs: %d slow_link findings, want %d", c.slow, n, c.want)
		}
	}
}
