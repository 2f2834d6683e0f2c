package detectors_test

import (
	"context"
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// diffRun writes a one-rank run of two steps (plus a last one left out):
// per step, kernel "a" of aDur µs, kernel "b" (only when withB), and
// calls x kernel "c" of 10 µs.
func diffRun(t *testing.T, aDur int64, withB bool, calls int) string {
	dir := t.TempDir()
	b := newTrace(0, 1)
	for s := range 3 {
		o := int64(s) * 10000
		b.step(s+1, o, 10000)
		b.launch("cudaLaunchKernel", o+10, 5, "kernel", "a", 7, o+100, aDur, nil)
		if withB {
			b.launch("cudaLaunchKernel", o+20, 5, "kernel", "b", 7, o+2000, 300, nil)
		}
		for i := range calls {
			b.launch("cudaLaunchKernel", o+30+int64(i), 1, "kernel", "c", 7, o+3000+int64(i)*20, 10, nil)
		}
	}
	b.write(t, dir)
	return dir
}

func TestDiff(t *testing.T) {
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for run, dir := range map[string]string{
		"base": diffRun(t, 100, true, 5),   // a 100 µs, b present, c x5
		"new":  diffRun(t, 250, false, 20), // a 250 µs, b gone, c x20
	} {
		files, _ := ingest.Discover([]string{dir})
		if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: run, Rank: -1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := detectors.SetWindow(ctx, st, detectors.Window{}); err != nil {
		t.Fatal(err)
	}
	rows, err := detectors.Diff(ctx, st, "base", "new", detectors.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]detectors.DiffRow{}
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
