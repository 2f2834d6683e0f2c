package diff_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors/diff"
	"github.com/trainscope/trainscope/detectors/internal/testkit"
)

// diffRun writes a one-rank run of two steps (plus a last one left out):
// per step, kernel "a" of aDur µs, kernel "b" (only when withB), and
// calls x kernel "c" of 10 µs.
func diffRun(t *testing.T, aDur int64, withB bool, calls int) string {
	dir := t.TempDir()
	b := testkit.NewTrace(0, 1)
	for s := range 3 {
		o := int64(s) * 10000
		b.Step(s+1, o, 10000)
		b.Launch("cudaLaunchKernel", o+10, 5, "kernel", "a", 7, o+100, aDur, nil)
		if withB {
			b.Launch("cudaLaunchKernel", o+20, 5, "kernel", "b", 7, o+2000, 300, nil)
		}
		for i := range calls {
			b.Launch("cudaLaunchKernel", o+30+int64(i), 1, "kernel", "c", 7, o+3000+int64(i)*20, 10, nil)
		}
	}
	b.Write(t, dir)
	return dir
}

func TestDiff(t *testing.T) {
	ctx := context.Background()
	st := testkit.LoadRuns(t, map[string]string{
		"base": diffRun(t, 100, true, 5),   // a 100 µs, b present, c x5
		"new":  diffRun(t, 250, false, 20), // a 250 µs, b gone, c x20
	})
	rows, err := diff.Changes(ctx, st, "base", "new", diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]diff.Row{}
	for _, r := range rows {
		got[r.Kind+" "+r.Name] = r
	}
	want := map[string]struct {
		change string
		delta  float64
	}{
		"gpu:kernel a": {"slower", 150_000},        // +150 µs a step
		"gpu:kernel b": {"removed", -300_000},      // -300 µs a step
		"gpu:kernel c": {"more_frequent", 150_000}, // +15 calls x 10 µs
	}
	for k, w := range want {
		r, ok := got[k]
		if !ok || r.Change != w.change || r.DeltaNSStep != w.delta {
			t.Errorf("%s = %+v (present %v), want %s %v", k, r, ok, w.change, w.delta)
		}
	}
	if len(rows) > 0 && rows[0].Name != "b" {
		t.Errorf("first row %q, want the largest move (b)", rows[0].Name)
	}
	// the runtime calls changed too: 5 -> 20 launches of c a step
	if r, ok := got["host:runtime cudaLaunchKernel"]; ok && r.Change != "more_frequent" {
		t.Errorf("launches: %+v", r)
	}
}

// loopRun writes a run of ranks without ProfilerSteps: iters iterations of
// period µs, each with four steady "layer" kernels, a "gemm" of gemm µs, an
// "optimizer" kernel at the iteration's end, and a "noise" kernel at
// irregular times (a distractor that repeats but not steadily). gemm[r] is
// rank r's, or gemm[0] every rank's.
func loopRun(t *testing.T, ranks int, iters float64, period int64, gemmUS ...int64) string {
	dir := t.TempDir()
	for r := range ranks {
		b := testkit.NewTrace(r, ranks)
		gemm := gemmUS[0]
		if r < len(gemmUS) {
			gemm = gemmUS[r]
		}
		n := int(iters * float64(period))
		for o := int64(0); o < int64(n); o += period {
			for l := range int64(4) {
				if ts := o + 100 + l*500; ts < int64(n) {
					b.Launch("cudaLaunchKernel", ts-50, 5, "kernel", "layer", 7, ts, 200, nil)
				}
			}
			if ts := o + 2500; ts+gemm < int64(n) {
				b.Launch("cudaLaunchKernel", ts-50, 5, "kernel", "gemm", 7, ts, gemm, nil)
			}
			if ts := o + period - 300; ts < int64(n) {
				b.Launch("cudaLaunchKernel", ts-50, 5, "kernel", "optimizer", 7, ts, 100, nil)
			}
			if ts := o + (o/period%3)*700 + 150; ts < int64(n) {
				b.Launch("cudaLaunchKernel", ts-50, 5, "kernel", "noise", 8, ts, 20, nil)
			}
		}
		b.Write(t, dir)
	}
	return dir
}

// Without ProfilerSteps, a diff cuts both captures into iterations by the
// kernel that repeats at the longest steady period, so a shorter capture
// of a slower job reads as slower per iteration, not as "less frequent".
func TestDiffWithoutSteps(t *testing.T) {
	st := testkit.LoadRuns(t, map[string]string{
		"base": loopRun(t, 2, 5.5, 10_000, 3_000), // 10 ms iterations, 5.5 of them
		"new":  loopRun(t, 2, 3.2, 12_000, 5_000), // the gemm takes 2 ms more: 12 ms, 3.2 captured
	})
	res, err := diff.Compare(context.Background(), st, "base", "new", diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Verdict
	for _, it := range []diff.Iterations{v.Base, v.New} {
		// gemm and optimizer both run once an iteration; noise and layer must not cut
		if it.Source != "kernel" || (it.Marker != "optimizer" && it.Marker != "gemm") || it.Marker != v.Base.Marker || it.Ranks != 2 {
			t.Errorf("%s cut by %s %q over %d ranks, want the optimizer or gemm kernel, the same in both runs, over 2", it.Run, it.Source, it.Marker, it.Ranks)
		}
	}
	if v.Base.IterNS != 10e6 || v.New.IterNS != 12e6 {
		t.Errorf("iterations %v and %v ns, want 10 ms and 12 ms", v.Base.IterNS, v.New.IterNS)
	}
	if v.DeltaPct != 20 || !strings.Contains(v.Text, "20.0% slower per iteration") {
		t.Errorf("verdict %+v %q", v.DeltaPct, v.Text)
	}
	if len(v.Moved) == 0 || v.Moved[0].Part != "GPU compute" {
		t.Fatalf("moved %+v, want GPU compute first", v.Moved)
	}
	// each iteration computes 4x200 + gemm + 100 + 20 µs: 3.92 ms, then 5.92
	if d := v.Moved[0].DeltaNS; math.Abs(d-2e6) > 0.1e6 {
		t.Errorf("GPU compute moved %v ns an iteration, want about 2 ms", d)
	}
	var gemm *diff.Row
	for i, r := range res.Changes {
		if r.Name == "gemm" {
			gemm = &res.Changes[i]
		}
		if r.Name == "layer" || r.Name == "optimizer" {
			t.Errorf("%s changed per iteration: %+v", r.Name, r)
		}
	}
	// a capture's partial iterations at its edges leave a few percent out
	if gemm == nil || gemm.Change != "slower" || math.Abs(gemm.DeltaNSStep-2e6) > 0.2e6 {
		t.Errorf("gemm row %+v, want slower by about 2 ms an iteration", gemm)
	}
	var md strings.Builder
	if err := diff.WriteMarkdown(&md, "base", "new", res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"**The new run is 20.0% slower per iteration", "the steady period of the kernel `", "| `GPU compute` | `3.9", "Largest movers: kernel `gemm` +1."} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// A diff of a run where one rank's GEMM got slower says which rank moved.
func TestDiffNamesTheRankThatMoved(t *testing.T) {
	st := testkit.LoadRuns(t, map[string]string{
		"base": loopRun(t, 4, 4.9, 10_000, 3_000),
		"new":  loopRun(t, 4, 4.9, 12_000, 3_000, 3_000, 5_000, 3_000), // rank 2's GEMM +2 ms, the iteration too
	})
	res, err := diff.Compare(context.Background(), st, "base", "new", diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 20% slower per iteration; of the compute that moved (+0.5 ms a rank
	// on average) all is rank 2's
	if !strings.Contains(res.Verdict.Text, "20.0% slower per iteration") ||
		!strings.Contains(res.Verdict.Text, "GPU compute moved most on rank 2 (+2.") { // a capture's partial iterations move it a little
		t.Errorf("verdict: %s", res.Verdict.Text)
	}
}
