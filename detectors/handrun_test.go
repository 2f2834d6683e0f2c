package detectors_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/sql/duck"
)

func metric(t *testing.T, st *duck.Store, detector string, rank any, subject any, name string) float64 {
	t.Helper()
	var v float64
	err := st.Conn().QueryRowContext(context.Background(),
		`SELECT value FROM metrics WHERE detector = ? AND metric = ? AND rank IS NOT DISTINCT FROM ? AND subject IS NOT DISTINCT FROM ?`,
		detector, name, rank, subject).Scan(&v)
	if err != nil {
		t.Fatalf("%s.%s rank=%v subject=%v: %v", detector, name, rank, subject, err)
	}
	return v
}

const us = 1000.0 // ns per µs

func TestHandRunMetrics(t *testing.T) {
	st, _ := analyzeDir(t, handRun(t), "hand", detectors.Window{})
	cases := []struct {
		detector string
		rank     any
		subject  any
		metric   string
		want     float64
	}{
		// window = steps 1-2; GPU span on both ranks is 100 µs .. 1860 µs
		{"temporal_breakdown", 0, nil, "span_ns", 1760 * us},
		{"temporal_breakdown", 0, nil, "idle_ns", 600 * us},
		{"temporal_breakdown", 0, nil, "compute_ns", 740 * us},
		{"temporal_breakdown", 0, nil, "non_compute_ns", 420 * us},
		{"temporal_breakdown", 0, nil, "idle_pct", 100 * 600.0 / 1760},
		{"temporal_breakdown", 1, nil, "idle_ns", 700 * us},
		{"temporal_breakdown", 1, nil, "compute_ns", 740 * us},
		{"temporal_breakdown", 1, nil, "non_compute_ns", 320 * us},
		// rank 0 is in the all-reduce 250 µs a step: it waits 100 µs for
		// rank 1 (350-450, 50 µs of it under K2), then both transfer for
		// 150 µs (450-600), with no compute beside it
		{"temporal_breakdown", 0, nil, "transfer_ns", 300 * us},
		{"temporal_breakdown", 0, nil, "wait_ns", 100 * us},
		{"temporal_breakdown", 1, nil, "wait_ns", 0},
		{"comm_comp_overlap", 0, nil, "comm_ns", 300 * us},
		{"comm_comp_overlap", 0, nil, "overlap_ns", 0},
		{"comm_comp_overlap", 0, nil, "overlap_pct", 0},
		{"comm_comp_overlap", 0, nil, "exposed_comm_ns", 300 * us},
		{"comm_comp_overlap", 0, nil, "exposed_comm_pct", 100 * 300.0 / 1760},
		{"comm_comp_overlap", 0, nil, "wait_ns", 100 * us},
		{"comm_comp_overlap", 1, nil, "overlap_ns", 0},
		{"comm_comp_overlap", 1, nil, "exposed_comm_ns", 300 * us},
		{"coll_wait", 0, "default_pg allreduce", "wait_ns", 100 * us},
		{"coll_wait", 0, "default_pg allreduce", "transfer_ns", 150 * us},
		{"coll_wait", 1, "default_pg allreduce", "wait_ns", 0},
		{"coll_wait", 1, "default_pg allreduce", "block_ns", 100 * us},
		// stream 7 gaps: 10 (kernel wait) 320 50 (host wait) per step, 240 between steps
		{"idle_breakdown", 0, "stream 7", "gaps", 7},
		{"idle_breakdown", 0, "stream 7", "kernel_wait_ns", 20 * us},
		{"idle_breakdown", 0, "stream 7", "host_wait_ns", 980 * us},
		{"idle_breakdown", 0, "stream 7", "other_ns", 0},
		{"idle_breakdown", 0, "stream 20", "host_wait_ns", 750 * us},
		// launches: 4 kernels + 1 memcpy a step; the memcpy (10 µs) is shorter than its call (20 µs)
		{"kernel_launch_stats", 0, nil, "launches", 10},
		{"kernel_launch_stats", 0, nil, "short_kernels", 2},
		{"kernel_launch_stats", 0, nil, "short_pct", 20},
		{"kernel_launch_stats", 0, nil, "delay_p50_ns", 45 * us},
		{"kernel_launch_stats", 0, nil, "delay_max_ns", 285 * us},
		{"kernel_launch_stats", 0, nil, "launch_delay_outliers", 2},
		// exclusive overlap classes, summed over both ranks
		{"kernel_type_breakdown", nil, "COMP", "time_ns", 1380 * us},
		{"kernel_type_breakdown", nil, "COMM", "time_ns", 600 * us},
		{"kernel_type_breakdown", nil, "COMP+WAIT", "time_ns", 100 * us},
		{"kernel_type_breakdown", nil, "WAIT", "time_ns", 100 * us},
		{"kernel_type_breakdown", nil, "MEM", "time_ns", 40 * us},
		// rank 1 is last at both all-reduces, 100 µs late each time
		{"straggler", 1, nil, "instances", 2},
		{"straggler", 1, nil, "times_last", 2},
		{"straggler", 1, nil, "wait_caused_ns", 200 * us},
		{"straggler", 0, nil, "times_last", 0},
		{"step_time", 0, nil, "steps", 2},
		// steps on the GPU timeline (the step-time account): step 1 from
		// its host start (0) to the end of its GPU work (the copy, 860 µs),
		// step 2 from there to 1860 µs
		{"step_time", 0, nil, "mean_ns", 930 * us},
		{"top_kernels", nil, "COMP | gemm_k1", "count", 4},
		{"top_kernels", nil, "COMP | gemm_k1", "sum_ns", 800 * us},
		{"top_kernels", nil, "COMP | gemm_k1", "median_ns", 200 * us},
		// 800 µs of the two ranks' 2 × 1760 µs spans
		{"top_kernels", nil, "COMP | gemm_k1", "bottleneck_pct", 100.0 * 800 / 3520},
		// the all-reduce of 1 Mi floats (4 MiB) in default_pg: rank 0 runs
		// 250 µs twice, the first 100 µs of each waiting for rank 1; over
		// the 150 µs transfer, 4,194,304 B / 150 µs = 27.96 GB/s, bus factor
		// 2(n-1)/n = 1 for n = 2, the same on both ranks
		{"comm_groups", 0, "default_pg allreduce RING/LL via unknown transport", "calls", 2},
		{"comm_groups", 0, "default_pg allreduce RING/LL via unknown transport", "gpu_ns", 500 * us},
		{"comm_groups", 0, "default_pg allreduce RING/LL via unknown transport", "wait_ns", 200 * us},
		{"comm_groups", 0, "default_pg allreduce RING/LL via unknown transport", "exposed_ns", 300 * us},
		{"comm_groups", 0, "default_pg allreduce RING/LL via unknown transport", "bytes_per_call", 4194304},
		{"comm_groups", 0, "default_pg allreduce RING/LL via unknown transport", "algbw_gbps", 27.96},
		{"comm_groups", 0, "default_pg allreduce RING/LL via unknown transport", "busbw_gbps", 27.96},
		{"comm_groups", 1, "default_pg allreduce RING/LL via unknown transport", "busbw_gbps", 27.96},
		{"comm_groups", 1, "default_pg allreduce RING/LL via unknown transport", "exposed_ns", 300 * us},
		// ProfilerStep#1 on rank 0: self time 1000 - 45 µs of launch calls;
		// the GPU is busy 580 µs of its 1000 (100-300, 310-600, 720-800,
		// 850-860), so 955 × 420/1000 µs of its self time is exposed; step
		// 2 is the same 1000 µs later, and both are the stack ProfilerStep#*
		{"host_exposed", 0, "annotation ProfilerStep#*", "calls", 2},
		{"host_exposed", 0, "annotation ProfilerStep#*", "self_ns", 2 * 955 * us},
		{"host_exposed", 0, "annotation ProfilerStep#*", "exposed_self_ns", 2 * 955.0 * 420 / 1000 * us},
	}
	for _, c := range cases {
		got := metric(t, st, c.detector, c.rank, c.subject, c.metric)
		if math.Abs(got-c.want) > 1e-6*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s rank=%v subject=%v %s = %v, want %v", c.detector, c.rank, c.subject, c.metric, got, c.want)
		}
	}
}

func TestHandRunStepWindow(t *testing.T) {
	// Only step 2: the span is 1100..1860 µs.
	st, _ := analyzeDir(t, handRun(t), "hand", detectors.Window{StepLo: 2, StepHi: 2, Set: true})
	if got := metric(t, st, "temporal_breakdown", 0, nil, "span_ns"); got != 760*us {
		t.Errorf("span with --steps 2 = %v, want %v", got, 760*us)
	}
	// Step 3 alone holds one 100 µs kernel.
	st3, _ := analyzeDir(t, handRun(t), "hand", detectors.Window{StepLo: 3, StepHi: 3, Set: true})
	if got := metric(t, st3, "temporal_breakdown", 0, nil, "compute_ns"); got != 100*us {
		t.Errorf("compute with --steps 3 = %v, want %v", got, 100*us)
	}
}

func TestHandRunFindings(t *testing.T) {
	st, _ := analyzeDir(t, handRun(t), "hand", detectors.Window{}, lowThresholds)
	rows, err := st.Query(context.Background(), `SELECT detector, coalesce(rank, -1), severity, round(value, 4) FROM findings ORDER BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]float64{}
	for rows.Next() {
		var det, sev string
		var rank int
		var v float64
		if err := rows.Scan(&det, &rank, &sev, &v); err != nil {
			t.Fatal(err)
		}
		got[det+"/"+sev+"/"+string(rune('0'+rank+1))] = v
	}
	// exposed comm (transfer only: rank 0's wait for rank 1 is not its
	// communication): 300/1760 = 17.0% on both ranks (warn)
	want := map[string]float64{
		"comm_exposed_ratio/warn/1": 0.1705,
		"comm_exposed_ratio/warn/2": 0.1705,
		"gpu_idle/warn/1":           0.3409,
		"gpu_idle/warn/2":           0.3977,
		// the GPU idles more of its span (mean of 600/1760 and 700/1760 =
		// 36.9%) than it spends in exposed transfer (17.0%): host-bound,
		// valued by the mean idle
		"bottleneck_class/info/0": 0.3693,
		// the exposed self time of the stack ProfilerStep#* (both steps) over
		// the 1760 µs span: rank 0 2 × 955 × 420/1000 µs, rank 1
		// 2 × 955 × 470/1000 µs (its all-reduce starts later)
		"host_exposed_ops/warn/1": 0.4558,
		"host_exposed_ops/warn/2": 0.5101,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-4 {
			t.Errorf("finding %s = %v (present %v), want %v; all: %v", k, g, ok, v, got)
		}
	}
	// 10 launches is under launch_overhead's min_launches; two collectives are
	// under straggler_rank's min_instances.
	for _, k := range []string{"launch_overhead", "straggler_rank"} {
		for g := range got {
			if len(g) > len(k) && g[:len(k)] == k {
				t.Errorf("unexpected finding %s", g)
			}
		}
	}
}

func TestHandRunTooSmallToClassify(t *testing.T) {
	st, _ := analyzeDir(t, handRun(t), "hand", detectors.Window{})
	var subject string
	var value float64
	if err := st.Conn().QueryRowContext(context.Background(),
		`SELECT subject, value FROM findings WHERE detector = 'bottleneck_class'`).Scan(&subject, &value); err != nil {
		t.Fatal(err)
	}
	if subject != "unclassified" || value != 20 {
		t.Errorf("bottleneck_class = %s %v, want unclassified with 20 activities", subject, value)
	}
}

func TestCommFixFollowsTheCollective(t *testing.T) {
	st, _ := analyzeDir(t, handRun(t), "hand", detectors.Window{})
	var fix string
	if err := st.Conn().QueryRowContext(context.Background(),
		`SELECT fix FROM findings WHERE detector = 'comm_exposed_ratio' AND rank = 0`).Scan(&fix); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fix, "most exposed time is all-reduce") {
		t.Errorf("fix for an all-reduce run = %q", fix)
	}
}

// TestMemoryFromTraceEvents: [memory] instants give per-step peaks; a peak
// that rises every step is reported as growth, and a reserve far above the
// allocation peak as unused.
func TestMemoryFromTraceEvents(t *testing.T) {
	const gib = int64(1) << 30
	dir := t.TempDir()
	b := newTrace(0, 1)
	for s := range 4 {
		o := int64(s) * 1000
		b.Step(s+1, o, 1000)
		b.Launch("cudaLaunchKernel", o+10, 5, "kernel", "k", 7, o+100, 100, nil)
		// allocated peaks at 1, 1.5, 2, 2.5 GiB; reserved stays at 4 GiB
		b.Memory(o+200, gib/2, 4*gib)
		b.Memory(o+300, gib+int64(s)*gib/2, 4*gib)
		b.Memory(o+400, gib/4, 4*gib)
	}
	b.Write(t, dir)
	st, _ := analyzeDir(t, dir, "mem", detectors.Window{})
	for step, want := range map[int]float64{1: float64(gib), 3: 2 * float64(gib)} {
		var got float64
		if err := st.Conn().QueryRowContext(context.Background(),
			`SELECT value FROM metrics WHERE detector = 'mem_step_peaks' AND metric = 'peak_allocated_bytes' AND step_lo = ?`, step).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("step %d peak allocated = %v, want %v", step, got, want)
		}
	}
	var growth, unused float64
	if err := st.Conn().QueryRowContext(context.Background(),
		`SELECT value FROM findings WHERE detector = 'mem_growth' AND metric = 'growth_allocated_bytes'`).Scan(&growth); err != nil {
		t.Fatalf("no growth finding: %v", err)
	}
	if growth != 1.5*float64(gib) {
		t.Errorf("growth = %v, want 1.5 GiB", growth)
	}
	// the worst step is step 1: 3 of 4 GiB unused
	if err := st.Conn().QueryRowContext(context.Background(),
		`SELECT value FROM findings WHERE detector = 'mem_step_unused'`).Scan(&unused); err != nil {
		t.Fatalf("no unused finding: %v", err)
	}
	if unused != 0.75 {
		t.Errorf("unused ratio = %v, want 0.75", unused)
	}
	var fleet float64
	if err := st.Conn().QueryRowContext(context.Background(),
		`SELECT value FROM metrics WHERE detector = 'mem_fleet' AND metric = 'trace_unused_gib'`).Scan(&fleet); err != nil || fleet != 3 {
		t.Errorf("fleet unused = %v GiB (%v), want 3", fleet, err)
	}
	var n int
	st.Conn().QueryRowContext(context.Background(), `SELECT count(*) FROM findings WHERE detector = 'mem_growth' AND metric = 'growth_reserved_bytes'`).Scan(&n)
	if n != 0 {
		t.Error("a flat reserve reported as growth")
	}
}

func TestNsightStyleRules(t *testing.T) {
	cfg := detectors.Config{Thresholds: map[string]map[string]float64{"gpu_gaps": {"min_gap_ns": 200_000}}}
	st, _ := analyzeDir(t, handRun(t), "hand", detectors.Window{}, cfg)
	got := map[string]float64{}
	rows, err := st.Query(context.Background(), `SELECT detector || '/' || rank, value FROM findings
		WHERE detector IN ('pageable_memcpy', 'gpu_gaps', 'sync_api', 'sync_memcpy')`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		var v float64
		rows.Scan(&k, &v)
		got[k] = v
	}
	rows.Close()
	// one pageable HtoD copy a step, two steps in the window; one 240 µs gap
	// between the steps; no synchronizing calls at all
	want := map[string]float64{"pageable_memcpy/0": 2, "pageable_memcpy/1": 2, "gpu_gaps/0": 1, "gpu_gaps/1": 1}
	if len(got) != len(want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

func TestGPUTimeUtil(t *testing.T) {
	// Two slices of the 1760 µs span, 880 µs each, are each 580 µs busy:
	// 65.9% utilization.
	for threshold, want := range map[float64]int{70: 2, 60: 0} {
		cfg := detectors.Config{Thresholds: map[string]map[string]float64{"gpu_time_util": {"chunks": 2, "min_util_pct": threshold}}}
		st, _ := analyzeDir(t, handRun(t), "hand", detectors.Window{}, cfg)
		var got float64
		err := st.Conn().QueryRowContext(context.Background(),
			`SELECT coalesce(max(value), 0) FROM findings WHERE detector = 'gpu_time_util' AND rank = 0`).Scan(&got)
		if err != nil || int(got) != want {
			t.Errorf("threshold %v%%: %v low slices (%v), want %d", threshold, got, err, want)
		}
	}
}

// The what-if follows the critical path through the collectives: every
// rank's steps take the same time (the all-reduce evens them out), yet in
// step 1 rank 2 reaches the all-reduce 300 µs after the others, and the
// step would have been 300 µs shorter without that.
func TestStragglerWhatIf(t *testing.T) {
	dir := t.TempDir()
	args := map[string]any{}
	for k, v := range ncclArgs {
		args[k] = v
	}
	args["Group size"], args["Process Group Ranks"] = 3, "[0, 1, 2]"
	for rank := range 3 {
		b := newTrace(rank, 3)
		for s := range 3 {
			o := int64(s) * 2000
			kdur, slowest := int64(100), int64(100)
			if s == 0 {
				slowest = 400
				if rank == 2 {
					kdur = 400
				}
			}
			b.Step(s+1, o, 1000)
			b.Launch("cudaLaunchKernel", o+10, 5, "kernel", "k", 7, o+100, kdur, nil)
			arrive, end := o+100+kdur+10, o+100+slowest+10+50
			b.Launch("cudaLaunchKernel", o+20, 5, "kernel", allReduce, 20, arrive, end-arrive, args)
		}
		b.Write(t, dir)
	}
	st, _ := analyzeDir(t, dir, "w", detectors.Window{})
	get := func(step int, m string) float64 {
		var v float64
		if err := st.Conn().QueryRowContext(context.Background(),
			`SELECT value FROM metrics WHERE detector = 'straggler_whatif' AND step_lo = ? AND metric = ?`, step, m).Scan(&v); err != nil {
			t.Fatalf("step %d %s: %v", step, m, err)
		}
		return v
	}
	if get(1, "costliest_rank") != 2 || get(1, "whatif_saving_ns") != 300*us || get(1, "slowest_ns") != get(1, "median_ns") {
		t.Errorf("step 1: costliest %v saving %v; step times %v and %v", get(1, "costliest_rank"), get(1, "whatif_saving_ns"), get(1, "slowest_ns"), get(1, "median_ns"))
	}
	if get(2, "whatif_saving_ns") != 0 {
		t.Errorf("step 2 saving %v, want 0", get(2, "whatif_saving_ns"))
	}
	// the ranks that waited for rank 2 waited 300 µs each; their transfer
	// is the 50 µs after it arrived
	var wait, transfer float64
	if err := st.Conn().QueryRowContext(context.Background(),
		`SELECT max(value) FILTER (WHERE metric = 'wait_ns'), max(value) FILTER (WHERE metric = 'transfer_ns')
		 FROM metrics WHERE detector = 'coll_wait' AND rank = 0 AND step_lo = 1`).Scan(&wait, &transfer); err != nil {
		t.Fatal(err)
	}
	if wait != 300*us || transfer != 50*us {
		t.Errorf("rank 0 in step 1: wait %v transfer %v, want 300 µs and 50 µs", wait, transfer)
	}
}

func TestMemOps(t *testing.T) {
	st, _ := analyzeDir(t, handRun(t), "hand", detectors.Window{})
	// one 10 µs HtoD copy of 4096 bytes a step with no compute beside it
	for m, want := range map[string]float64{"ops": 2, "moved_bytes": 8192, "gpu_ns": 20 * us, "exposed_ns": 20 * us,
		"bottleneck_pct": math.Round(1e4*100*20/1760) / 1e4, "achieved_gbps": 0.4096} {
		if got := metric(t, st, "mem_ops", 0, "Memcpy HtoD", m); math.Abs(got-want) > 1e-4 {
			t.Errorf("mem_ops %s = %v, want %v", m, got, want)
		}
	}
	var n int
	if err := st.Conn().QueryRowContext(context.Background(),
		`SELECT count(*) FROM findings WHERE detector = 'mem_ops_exposed' AND subject = 'Memcpy HtoD'`).Scan(&n); err != nil || n != 2 {
		t.Errorf("mem_ops_exposed findings = %d (%v), want one per rank", n, err)
	}
}

// TestCommTransport checks that comm_groups names the transport from where
// the group's ranks run: both hand-run ranks on one H100 host talk over
// NVLink, on two hosts over the network.
func TestCommTransport(t *testing.T) {
	cases := []struct {
		hosts [2]string
		gpu   string // deviceProperties name; "" keeps the H100
		want  string
	}{
		{[2]string{"nodeA", "nodeA"}, "", "NVLink"},
		{[2]string{"nodeA", "nodeB"}, "", "network"},
		{[2]string{"nodeA", "nodeB"}, "NVIDIA L4", "network"},
		// an L4 has no NVLink: two on one host talk over PCIe
		{[2]string{"nodeA", "nodeA"}, "NVIDIA L4", "PCIe"},
		// a GPU not in the catalog: one host, link unknown
		{[2]string{"nodeA", "nodeA"}, "Mystery GPU 9000", "unknown transport"},
	}
	for _, c := range cases {
		t.Run(c.want+" "+c.gpu, func(t *testing.T) {
			dir := handRun(t)
			for rank, host := range c.hosts {
				// the host comes from the trace's host_name metadata
				path := filepath.Join(dir, fmt.Sprintf("rank-%d.pt.trace.json", rank))
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if c.gpu != "" {
					raw = bytes.ReplaceAll(raw, []byte("NVIDIA H100 80GB HBM3"), []byte(c.gpu))
				}
				raw = bytes.Replace(raw, []byte("{"), []byte(`{"host_name": "`+host+`",`), 1)
				if err := os.WriteFile(path, raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			st, _ := analyzeDir(t, dir, "hand", detectors.Window{})
			for rank := range 2 {
				subject := "default_pg allreduce RING/LL via " + c.want
				if got := metric(t, st, "comm_groups", rank, subject, "calls"); got != 2 {
					t.Errorf("rank %d %s calls = %v, want 2", rank, subject, got)
				}
			}
		})
	}
}

// The report's root causes are written to root_causes for SQL and Grafana,
// in the report's order, and writing them again replaces them.
func TestRootCausesTable(t *testing.T) {
	ctx := context.Background()
	st, res := analyzeDir(t, handRun(t), "hand", detectors.Window{}, lowThresholds)
	rep, err := detectors.BuildReport(ctx, st, res)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Causes) == 0 {
		t.Fatal("the hand run has no root cause (rank 1 is late at both collectives)")
	}
	for range 2 {
		if err := detectors.SaveCauses(ctx, st, rep); err != nil {
			t.Fatal(err)
		}
	}
	var n, pos int
	var kind, headline string
	var rank sql.NullInt64
	var cost float64
	if err := st.Conn().QueryRowContext(ctx, `SELECT count(*) OVER (), position, kind, rank, cost_ns_per_step, headline
		FROM root_causes WHERE run_id = 'hand' ORDER BY position LIMIT 1`).Scan(&n, &pos, &kind, &rank, &cost, &headline); err != nil {
		t.Fatal(err)
	}
	c := rep.Causes[0]
	if n != len(rep.Causes) || pos != 1 || kind != c.Kind || !rank.Valid || int(rank.Int64) != *c.Rank || cost != c.CostNS || headline != c.Headline {
		t.Errorf("root_causes: %d rows, first %d %s rank %v cost %v %q; report: %d causes, first %+v", n, pos, kind, rank, cost, headline, len(rep.Causes), c)
	}
}
