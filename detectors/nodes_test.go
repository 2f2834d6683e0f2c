package detectors_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/sql/duck"
)

// wilson is the one-sided 95% Wilson lower bound of k bad runs out of n,
// the score node_reputation gives.
func wilson(k, n int) float64 {
	const z = 1.6448536
	p, fn := float64(k)/float64(n), float64(n)
	return (p + z*z/(2*fn) - z*math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn))) / (1 + z*z/fn)
}

// analyzeJobs loads each folder as its own run (ids from runIDs) into one
// store, runs every detector and records node history, as analyze --db
// does for a database that holds several jobs.
func analyzeJobs(t *testing.T, dirs, runIDs []string) (*duck.Store, *report.Report) {
	t.Helper()
	ctx := context.Background()
	runs := map[string]string{}
	for i, dir := range dirs {
		runs[runIDs[i]] = dir
	}
	st := loadRuns(t, runs)
	rep, err := detectors.BuildReport(ctx, st, runDetectors(t, st, detectors.Window{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := detectors.SaveNodeHistory(ctx, st, rep, time.Unix(1_800_000_000, 0)); err != nil {
		t.Fatal(err)
	}
	return st, rep
}

type reputation struct {
	runs, bad, slow int
	score           float64
	badRuns         string
}

func reputationOf(t *testing.T, st *duck.Store, query string) map[string]reputation {
	t.Helper()
	rows, err := st.Query(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]reputation{}
	for rows.Next() {
		var node string
		var r reputation
		var bad *string
		if err := rows.Scan(&node, &r.runs, &r.bad, &r.slow, &r.score, &bad); err != nil {
			t.Fatal(err)
		}
		if bad != nil {
			r.badRuns = *bad
		}
		out[node] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Six jobs land on the same four GPUs (two hosts, two GPUs each) in a
// different rank order each time. GPU h1:1 is 1.5x slow in four of them;
// h0:0 once (a one-off); the last job is healthy. The history must follow
// the GPU, not the rank, and the reputation must single out h1:1 while
// one bad run leaves h0:0 far behind.
func TestNodeHistoryFollowsTheGPUAcrossJobs(t *testing.T) {
	slots := []struct {
		host   string
		device int
	}{{"h0", 0}, {"h0", 1}, {"h1", 0}, {"h1", 1}}
	slowIn := map[int]string{0: "h1:1", 1: "h1:1", 2: "h0:0", 3: "h1:1", 4: "h1:1"}
	var dirs, ids []string
	rankOf := map[string]int{} // job/node -> its rank
	for j := range 6 {
		job := gemmJob{chained: true, origin: 1_700_000_000_000_000 + int64(j)*3_600_000_000}
		for r := range 4 {
			s := slots[(r+j)%4]
			node := fmt.Sprintf("%s:%d", s.host, s.device)
			rankOf[fmt.Sprintf("job%d/%s", j, node)] = r
			job.hosts = append(job.hosts, s.host)
			job.devices = append(job.devices, s.device)
			us := int64(300)
			if slowIn[j] == node {
				us = 450
			}
			job.gemmUS = append(job.gemmUS, us)
		}
		dirs, ids = append(dirs, job.write(t)), append(ids, fmt.Sprintf("job%d", j))
	}
	st, rep := analyzeJobs(t, dirs, ids)
	ctx := context.Background()

	// every GPU of every job has its row, under the rank it ran
	rows, err := st.Query(ctx, `SELECT run_id, node, rank, slow, bad, coalesce(detectors, ''), late_share, slowdown
		FROM node_history WHERE entity = 'gpu' ORDER BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
		var run, node, dets string
		var rank int
		var slow, bad bool
		var late, slowdown float64
		if err := rows.Scan(&run, &node, &rank, &slow, &bad, &dets, &late, &slowdown); err != nil {
			t.Fatal(err)
		}
		if want := rankOf[run+"/"+node]; rank != want {
			t.Errorf("%s %s: rank %d, want %d", run, node, rank, want)
		}
		var j int
		fmt.Sscanf(run, "job%d", &j)
		wantSlow := slowIn[j] == node
		if slow != wantSlow || bad != wantSlow {
			t.Errorf("%s %s: slow %v bad %v (detectors %q), want %v", run, node, slow, bad, dets, wantSlow)
		}
		if wantSlow && (!strings.Contains(dets, "slow_rank") || late < 0.9 || math.Abs(slowdown-1.5) > 0.1) {
			t.Errorf("%s %s: detectors %q, late share %v, slowdown %v; want slow_rank, last at nearly every collective, ~1.5x", run, node, dets, late, slowdown)
		}
	}
	rows.Close()
	if n != 24 {
		t.Errorf("%d GPU rows, want 6 jobs x 4 GPUs", n)
	}

	const q = `SELECT node, runs, bad_runs, slow_runs, score, bad_run_ids FROM %s WHERE entity = 'gpu'`
	all := reputationOf(t, st, fmt.Sprintf(q, "node_reputation"))
	want := map[string]reputation{
		"h1:1": {6, 4, 4, wilson(4, 6), "job4,job3,job1,job0"},
		"h0:0": {6, 1, 1, wilson(1, 6), "job2"},
		"h0:1": {6, 0, 0, 0, ""},
		"h1:0": {6, 0, 0, 0, ""},
	}
	checkReputation(t, "last 10 runs", all, want)
	// the last three jobs by start time: job3 and job4 bad on h1:1
	last3 := reputationOf(t, st, fmt.Sprintf(q, "node_reputation_over(3)"))
	checkReputation(t, "last 3 runs", last3, map[string]reputation{
		"h1:1": {3, 2, 2, wilson(2, 3), "job4,job3"},
		"h0:0": {3, 0, 0, 0, ""},
		"h0:1": {3, 0, 0, 0, ""},
		"h1:0": {3, 0, 0, 0, ""},
	})
	if all["h0:0"].score > 0.1 || all["h1:1"].score < 0.3 {
		t.Errorf("scores: one bad run of six %.3f, four of six %.3f", all["h0:0"].score, all["h1:1"].score)
	}

	// saving again replaces the runs' rows; a partial report saves nothing
	if err := detectors.SaveNodeHistory(ctx, st, rep, time.Unix(1_800_000_100, 0)); err != nil {
		t.Fatal(err)
	}
	if err := st.Exec(ctx, "DELETE FROM node_history WHERE run_id = 'job5'"); err != nil {
		t.Fatal(err)
	}
	partial := *rep
	partial.Status = &report.RunStatus{Partial: true}
	if err := detectors.SaveNodeHistory(ctx, st, &partial, time.Unix(1_800_000_200, 0)); err != nil {
		t.Fatal(err)
	}
	var rowsNow, job5 int
	if err := st.Conn().QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE run_id = 'job5') FROM node_history WHERE entity = 'gpu'`).Scan(&rowsNow, &job5); err != nil {
		t.Fatal(err)
	}
	if rowsNow != 20 || job5 != 0 {
		t.Errorf("after saving again and a partial save: %d GPU rows (%d of job5), want 20 (none of job5)", rowsNow, job5)
	}
}

func checkReputation(t *testing.T, what string, got, want map[string]reputation) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d GPUs, want %d: %v", what, len(got), len(want), got)
	}
	for node, w := range want {
		g := got[node]
		if g.runs != w.runs || g.bad != w.bad || g.slow != w.slow || math.Abs(g.score-w.score) > 1e-3 || g.badRuns != w.badRuns {
			t.Errorf("%s: %s = %+v, want %+v", what, node, g, w)
		}
	}
}

// Four two-rank groups on two hosts; group [4, 5] (host n1, GPUs 0 and 1)
// transfers at half the bandwidth of the others: its link is the one slow
// link of the run, with its bandwidth drop.
func TestNodeHistoryLinks(t *testing.T) {
	dir := linkRunOn(t, []int64{100, 110, 200, 100}, 3, true, func(b *traceBuilder) {
		b.Host, b.Device = fmt.Sprintf("n%d", b.Rank/4), b.Rank%4
	})
	st, _ := analyzeJobs(t, []string{dir}, []string{"links"})
	rows, err := st.Query(context.Background(), `SELECT node, host, slow, coalesce(slowdown, 0) FROM node_history WHERE entity = 'link' ORDER BY node`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var node, host string
		var slow bool
		var drop float64
		if err := rows.Scan(&node, &host, &slow, &drop); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s on %s slow=%v drop=%.4f", node, host, slow, drop))
	}
	want := []string{
		"n0:0,n0:1 on n0 slow=false drop=0.0000",
		"n0:2,n0:3 on n0 slow=false drop=0.0000",
		fmt.Sprintf("n1:0,n1:1 on n1 slow=true drop=%.4f", 10.0/21),
		"n1:2,n1:3 on n1 slow=false drop=0.0000",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A trace that names no host gives its GPU no name to follow across jobs:
// no row, rather than every such GPU merged into one node.
func TestNodeHistorySkipsUnknownHosts(t *testing.T) {
	st, _ := analyzeJobs(t, []string{linkRun(t, []int64{100, 100}, 3, true)}, []string{"nohost"})
	var n int
	if err := st.Conn().QueryRowContext(context.Background(), "SELECT count(*) FROM node_history").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d node_history rows for ranks without a host", n)
	}
}
