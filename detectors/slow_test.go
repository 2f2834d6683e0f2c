package detectors_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
)

// slowRun writes world ranks, rank r on hosts[r] (its trace's host_name
// metadata; the file name is a tensorboard_trace_handler one, which must
// not be read as a host). Every rank
// runs three steps of three GEMMs and an allreduce; a rank's GEMMs take
// gemmUS[r] µs. The allreduce runs at a fixed time in the step.
func slowRun(t *testing.T, hosts []string, gemmUS []int64) string {
	return gemmRun(t, hosts, gemmUS, false)
}

// gemmRun is slowRun; with chained, each rank's allreduce starts when its
// GEMMs are done and all end 200 µs after the last arrival (the slowest
// GEMMs set it), so a slower rank arrives last and its peers wait.
func gemmRun(t *testing.T, hosts []string, gemmUS []int64, chained bool) string {
	return gemmJob{hosts: hosts, gemmUS: gemmUS, chained: chained}.write(t)
}

// gemmJob is gemmRun's run with more said about where it ran: each rank's
// CUDA device (nil: 0) and the run's start (µs since the epoch; 0: the
// trace builder's default).
type gemmJob struct {
	hosts   []string
	devices []int
	gemmUS  []int64
	chained bool
	origin  int64
}

func (j gemmJob) write(t *testing.T) string {
	hosts, gemmUS, chained := j.hosts, j.gemmUS, j.chained
	dir := t.TempDir()
	world := len(hosts)
	slowest := slices.Max(gemmUS)
	for r := range world {
		b := newTrace(r, world)
		b.Host = hosts[r]
		if j.devices != nil {
			b.Device = j.devices[r]
		}
		if j.origin != 0 {
			b.Origin = j.origin
		}
		for s := range 3 {
			base := int64(s) * 5000
			b.Step(s+1, base, 5000)
			at := base + 100
			for range 3 {
				b.Launch("cudaLaunchKernel", at, 10, "kernel", gemm, 7, at+20, gemmUS[r], nil)
				at += gemmUS[r] + 50
			}
			start, end := 3000+base, 3200+base
			if chained {
				start, end = at+20, base+100+3*(slowest+50)+200
			}
			b.Launch("cudaLaunchKernel", at, 10, "kernel", allReduce, 20, start, end-start, ncclArgs)
		}
		path := b.Write(t, dir)
		name := fmt.Sprintf("worker%d_step_%d.1700000000%03d.pt.trace.json", r, 100+r, r)
		if err := os.Rename(path, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func findingsOf(t *testing.T, dir, detector string) []map[string]any {
	t.Helper()
	st, _ := analyzeDir(t, dir, "slow", detectors.Window{})
	rows, err := st.Query(context.Background(), `SELECT coalesce(rank, -1), coalesce(host, ''), coalesce(step_lo, -1), value, message FROM findings WHERE detector = ? ORDER BY ALL`, detector)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var rank, step int
		var host, msg string
		var v float64
		if err := rows.Scan(&rank, &host, &step, &v, &msg); err != nil {
			t.Fatal(err)
		}
		out = append(out, map[string]any{"rank": rank, "host": host, "step": step, "value": v, "message": msg})
	}
	return out
}

func TestSlowHostNamesTheNode(t *testing.T) {
	// nodeB's two ranks run their GEMMs 1.5x slower than nodeA's
	dir := slowRun(t, []string{"nodeA", "nodeA", "nodeB", "nodeB"}, []int64{300, 300, 450, 450})
	got := findingsOf(t, dir, "slow_host")
	if len(got) != 1 {
		t.Fatalf("slow_host findings: %v, want one for nodeB", got)
	}
	f := got[0]
	// slowdowns against the peer median (375 µs): nodeB 1.2, nodeA 0.8
	if f["host"] != "nodeB" || f["step"] != 1 || fmt.Sprintf("%.3f", f["value"]) != "0.500" {
		t.Errorf("slow_host = %v; want nodeB from step 1, 1.2/0.8 - 1 = 0.5", f)
	}
	for _, want := range []string{"host nodeB is slow", "2 rank(s) (2,3)", "50% slower", "from step 1"} {
		if !strings.Contains(f["message"].(string), want) {
			t.Errorf("message lacks %q: %s", want, f["message"])
		}
	}
	// two slow ranks of four are no single outlier
	if s := findingsOf(t, dir, "slow_rank"); len(s) != 0 {
		t.Errorf("slow_rank fired on a slow host: %v", s)
	}
}

func TestSlowRankSinglesOutOneGPU(t *testing.T) {
	// four hosts, rank 3's GEMMs 1.5x slower
	dir := slowRun(t, []string{"n0", "n1", "n2", "n3"}, []int64{300, 300, 300, 450})
	got := findingsOf(t, dir, "slow_rank")
	if len(got) != 1 || got[0]["rank"] != 3 || fmt.Sprintf("%.2f", got[0]["value"]) != "0.50" {
		t.Fatalf("slow_rank = %v; want rank 3, 50%% slower", got)
	}
	if !strings.Contains(got[0]["message"].(string), "rank 3 runs its compute kernels 50% slower") {
		t.Errorf("message: %s", got[0]["message"])
	}
	// a host of one rank is that rank: slow_host names it too
	if h := findingsOf(t, dir, "slow_host"); len(h) != 1 || h[0]["host"] != "n3" {
		t.Errorf("slow_host = %v, want n3", h)
	}
	// equal GPUs: nothing
	even := slowRun(t, []string{"n0", "n1", "n2", "n3"}, []int64{300, 300, 300, 300})
	for _, d := range []string{"slow_rank", "slow_host"} {
		if f := findingsOf(t, even, d); len(f) != 0 {
			t.Errorf("%s on equal ranks: %v", d, f)
		}
	}
}

// Rank 3 computes a third of what its peers compute in the same span:
// util_spread names the extremes, abnormal_util the rank.
func TestAbnormalUtilization(t *testing.T) {
	dir := slowRun(t, []string{"n0", "n1", "n2", "n3"}, []int64{300, 300, 300, 100})
	st, _ := analyzeDir(t, dir, "util", detectors.Window{})
	// steps 1-2: span 120 .. 8200 µs; compute 2 steps × 3 GEMMs
	span := 8080.0
	for _, c := range []struct {
		name string
		want float64
	}{
		{"ranks", 4},
		{"min_util_pct", math.Round(100*600/span*100) / 100},
		{"median_util_pct", math.Round(100*1800/span*100) / 100},
		{"max_util_pct", math.Round(100*1800/span*100) / 100},
		{"min_rank", 3},
		{"abnormal_ranks", 1},
	} {
		if got := metric(t, st, "util_spread", nil, nil, c.name); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("util_spread %s = %v, want %v", c.name, got, c.want)
		}
	}
	got := findingsOf(t, dir, "abnormal_util")
	if len(got) != 1 || got[0]["rank"] != 3 {
		t.Fatalf("abnormal_util = %v, want rank 3", got)
	}
	if even := findingsOf(t, slowRun(t, []string{"n0", "n1", "n2", "n3"}, []int64{300, 300, 300, 300}), "abnormal_util"); len(even) != 0 {
		t.Errorf("abnormal_util on equal ranks: %v", even)
	}
}

// At scale a slow host's ranks are each an outlier among the run's ranks,
// and a slow rank elsewhere is slower than some of them: slow_host still
// names the host, slow_rank names only the rank whose host-mates are fast.
func TestSlowHostBesideASlowRank(t *testing.T) {
	var hosts []string
	var gemm []int64
	for r := range 16 {
		hosts = append(hosts, fmt.Sprintf("n%d", r/4))
		us := int64(300)
		switch {
		case r/4 == 2: // host n2, 1.4x (its ranks 1.35-1.45x)
			us = 405 + int64(r%4)*10
		case r == 13: // one rank of n3, 1.45x: slower than some of n2's ranks
			us = 435
		}
		gemm = append(gemm, us)
	}
	dir := slowRun(t, hosts, gemm)
	if h := findingsOf(t, dir, "slow_host"); len(h) != 1 || h[0]["host"] != "n2" {
		t.Errorf("slow_host = %v, want n2 only", h)
	}
	if r := findingsOf(t, dir, "slow_rank"); len(r) != 1 || r[0]["rank"] != 13 {
		t.Errorf("slow_rank = %v, want rank 13 only (n2's ranks are slow_host's)", r)
	}
}

// One slow rank on a host of four is a slow rank, not a slow host, even
// when its host-mates happen to run a little slower than the other host's
// ranks (at 8 ranks the host's average then passed 10%).
func TestOneSlowRankDoesNotMakeItsHostSlow(t *testing.T) {
	dir := slowRun(t, []string{"nA", "nA", "nA", "nA", "nB", "nB", "nB", "nB"}, []int64{300, 300, 300, 300, 303, 304, 500, 305})
	if h := findingsOf(t, dir, "slow_host"); len(h) != 0 {
		t.Errorf("slow_host = %v, want none", h)
	}
	if r := findingsOf(t, dir, "slow_rank"); len(r) != 1 || r[0]["rank"] != 6 {
		t.Errorf("slow_rank = %v, want rank 6", r)
	}
}

// A balanced run names the rank that costs the most anyway, with its share
// and what made it late, as a lead for a cost too small to be a headline.
func TestBalancedVerdictNamesTheLead(t *testing.T) {
	// rank 3's GEMMs take 6 µs longer: it reaches each allreduce 18 µs
	// after its peers, 0.4% of a step
	dir := gemmRun(t, []string{"n0", "n1", "n2", "n3"}, []int64{300, 300, 300, 306}, true)
	st, res := analyzeDir(t, dir, "balanced", detectors.Window{})
	rep, err := detectors.BuildReport(context.Background(), st, res)
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if want := "(the most, rank 3, "; !strings.Contains(md.String(), "**Balanced: no rank holds the others up") || !strings.Contains(md.String(), want) ||
		!strings.Contains(md.String(), ": its kernels run slower than its peers')") {
		t.Errorf("verdict lacks the lead on rank 3:\n%s", md.String()[:min(md.Len(), 900)])
	}
}
