package detectors_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
)

// gpuState is what one GPU's counters read at one sample.
type gpuState struct {
	clock, power, temp float64
	reasons            int
	usedMiB            float64
	xid                int
	lost               bool
	nvlinkGBs, pcieGBs float64 // link throughput, TX and RX each
}

// hwRun is a generated 8-rank job on one 8-GPU host (rank r on device r)
// with a dcgm-exporter scrape of every GPU every 50 ms, timestamped, saved
// with the traces. Each of 7 steps of 140 ms runs eight GEMMs of gemmUS
// (rank, step) µs back to back and then an all-reduce that ends 2 ms after
// the last rank's GEMMs (or xferUS): a rank whose GEMMs are slower arrives last and its
// peers wait. state(rank, t) gives its GPU's counters at t µs into the run.
type hwRun struct {
	gemmUS func(rank, step int) int64
	state  func(rank int, atUS int64) gpuState
	xferUS int64 // the all-reduce's transfer after the last arrival; 0 is 2 ms
}

const (
	hwRanks  = 8
	hwSteps  = 7
	hwStepUS = 140_000
)

func (h hwRun) write(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for r := range hwRanks {
		b := newTrace(r, hwRanks)
		b.Host, b.Device = "node-a", r
		for s := range hwSteps {
			base := int64(s) * hwStepUS
			b.Step(s+1, base, hwStepUS)
			slowest := int64(0)
			for p := range hwRanks {
				slowest = max(slowest, h.gemmUS(p, s+1))
			}
			g := h.gemmUS(r, s+1)
			at := base + 200
			for range 8 {
				b.Launch("cudaLaunchKernel", at, 10, "kernel", gemm, 7, at+20, g, nil)
				at += g + 100
			}
			end := base + 200 + 8*(slowest+100) + cmp.Or(h.xferUS, 2000)
			b.Launch("cudaLaunchKernel", at, 10, "kernel", allReduce, 20, at+20, end-at-20, ncclArgs)
		}
		b.Write(t, dir)
	}
	// the exporter's samples, from 100 ms before the first step to 100 ms
	// after the last, as a file of timestamped scrapes
	var sb strings.Builder
	origin := newTrace(0, 1).Origin
	for at := int64(-100_000); at <= hwSteps*hwStepUS+100_000; at += 50_000 {
		ms := (origin + at) / 1000
		for _, fam := range []struct{ name, help string }{
			{"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)."},
			{"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."},
			{"DCGM_FI_DEV_POWER_MGMT_LIMIT", "Power management limit (in W)."},
			{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."},
			{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "Current clock throttle reasons."},
			{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."},
			{"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."},
			{"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered."},
			{"TRAINSCOPE_GPU_LOST", "1 once NVML has lost the GPU."},
			{"DCGM_FI_PROF_NVLINK_TX_BYTES", "The rate of data transmitted over NVLink, not including protocol headers, in bytes per second."},
			{"DCGM_FI_PROF_NVLINK_RX_BYTES", "The rate of data received over NVLink, not including protocol headers, in bytes per second."},
			{"DCGM_FI_PROF_PCIE_TX_BYTES", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second."},
			{"DCGM_FI_PROF_PCIE_RX_BYTES", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second."},
		} {
			fmt.Fprintf(&sb, "# HELP %s %s\n# TYPE %s gauge\n", fam.name, fam.help, fam.name)
			for r := range hwRanks {
				s := h.state(r, at)
				v := map[string]float64{"DCGM_FI_DEV_SM_CLOCK": s.clock, "DCGM_FI_DEV_POWER_USAGE": s.power,
					"DCGM_FI_DEV_POWER_MGMT_LIMIT": 700, "DCGM_FI_DEV_GPU_TEMP": s.temp,
					"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": float64(s.reasons), "DCGM_FI_DEV_FB_USED": s.usedMiB,
					"DCGM_FI_DEV_FB_FREE": 81559 - s.usedMiB, "DCGM_FI_DEV_XID_ERRORS": float64(s.xid),
					"TRAINSCOPE_GPU_LOST":          map[bool]float64{true: 1}[s.lost],
					"DCGM_FI_PROF_NVLINK_TX_BYTES": s.nvlinkGBs * 1e9, "DCGM_FI_PROF_NVLINK_RX_BYTES": s.nvlinkGBs * 1e9,
					"DCGM_FI_PROF_PCIE_TX_BYTES": s.pcieGBs * 1e9, "DCGM_FI_PROF_PCIE_RX_BYTES": s.pcieGBs * 1e9}[fam.name]
				fmt.Fprintf(&sb, "%s{gpu=\"%d\",UUID=\"GPU-%08d-0000-0000-0000-000000000000\",device=\"nvidia%d\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-a\"} %g %d\n",
					fam.name, r, r, r, v, ms)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "dcgm-node-a.prom"), []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// healthy is a busy H100 at its boost clock; its NVLink carries a 2 ms
// all-reduce per 140 ms step (about 5 GB/s each way on average) and its
// PCIe the input batches.
func healthy(int, int64) gpuState {
	return gpuState{clock: 1980, power: 640, temp: 66, usedMiB: 61000, nvlinkGBs: 5, pcieGBs: 2}
}

// throttledRank3 is the case: from step 3 on rank 3's GPU runs
// 30% below its clock with a thermal slowdown reason, and its GEMMs take
// 1/0.7 as long. Beside it two distractors: rank 6 is a slightly slower
// part (clock and GEMMs 2% off) and rank 5's clock reads low in idle
// samples between its steps while its kernels keep pace.
func throttledRank3() hwRun {
	onset := int64(2 * hwStepUS)
	return hwRun{
		gemmUS: func(rank, step int) int64 {
			switch {
			case rank == 3 && step >= 3:
				return 14_286
			case rank == 6:
				return 10_200
			}
			return 10_000
		},
		state: func(rank int, at int64) gpuState {
			s := healthy(rank, at)
			switch {
			case rank == 3 && at >= onset:
				s.clock, s.power, s.temp, s.reasons = 1386, 520, 91, 0x20
			case rank == 6:
				s.clock = 1940
			case rank == 5 && (at/50_000)%2 == 0:
				s.clock, s.reasons = 1200, 0x1 // idle
			}
			return s
		},
	}
}

func TestThrottledRankIsTheRootCause(t *testing.T) {
	ctx := context.Background()
	st, res := analyzeDir(t, throttledRank3().write(t), "thr", detectors.Window{})
	rep, err := detectors.BuildReport(ctx, st, res)
	if err != nil {
		t.Fatal(err)
	}
	var throttled []string
	for _, f := range rep.Findings {
		if f.Detector == "gpu_throttle" || f.Detector == "gpu_clock_cap" || f.Detector == "gpu_xid" || f.Detector == "gpu_mem_full" {
			throttled = append(throttled, fmt.Sprintf("%s rank %v: %s", f.Detector, rankOf(f.Rank), f.Message))
		}
	}
	if len(throttled) != 1 || !strings.HasPrefix(throttled[0], "gpu_throttle rank 3:") ||
		!strings.Contains(throttled[0], "SM clock 1386 MHz against the run's median 1980 MHz (-30%)") ||
		!strings.Contains(throttled[0], "SW thermal slowdown") {
		t.Fatalf("hardware findings:\n%s\nwant one gpu_throttle on rank 3 with its clock and reason", strings.Join(throttled, "\n"))
	}
	if len(rep.Causes) == 0 {
		t.Fatal("no root cause")
	}
	c := rep.Causes[0]
	if c.Rank == nil || *c.Rank != 3 || c.Why != "throttle" || !strings.Contains(c.Headline, "because its GPU throttles (SM clock 1386 MHz against the run's 1980 MHz, SW thermal slowdown in 65% of samples), and its kernels take") ||
		!strings.Contains(c.Headline, "SM clock 1386 MHz against the run's 1980 MHz") {
		t.Fatalf("headline cause %+v, want rank 3 throttling with its clock", c)
	}
	counter := false
	for _, e := range c.Evidence {
		counter = counter || strings.HasPrefix(e, "counters: rank 3's GPU (node-a gpu 3) throttles")
	}
	if !counter {
		t.Errorf("evidence %q carries no counter", c.Evidence)
	}
	shown := map[string]bool{}
	for _, id := range c.Shown {
		for _, f := range rep.Findings {
			if f.ID == id {
				shown[f.Detector] = true
			}
		}
	}
	if !shown["gpu_throttle"] || !shown["slow_rank"] {
		t.Errorf("cause shown by %v, want gpu_throttle and slow_rank", c.Shown)
	}
}

func rankOf(p *int64) any {
	if p == nil {
		return "-"
	}
	return *p
}

// Each case's hardware findings, as "detector rank" (rank - when the
// finding names several), against what it should find: a weak throttle, a
// cap across the job, an XID, a full framebuffer, and a clean run.
func TestHardwareFindings(t *testing.T) {
	even := func(int, int) int64 { return 10_000 }
	cases := []struct {
		name string
		run  hwRun
		want []string
		msg  string // a part of the first finding's message, where set
	}{
		{"clean", hwRun{gemmUS: even, state: healthy}, nil, ""},
		{"weak throttle: rank 2 clock -12%, GEMMs 1.14x", hwRun{
			gemmUS: func(rank, _ int) int64 { return map[bool]int64{true: 11_400, false: 10_000}[rank == 2] },
			state: func(rank int, at int64) gpuState {
				s := healthy(rank, at)
				if rank == 2 {
					s.clock = 1742
				}
				return s
			}}, []string{"gpu_throttle 2"}, ""},
		{"power cap across the job, no slower peer", hwRun{gemmUS: even,
			state: func(rank int, at int64) gpuState {
				s := healthy(rank, at)
				s.clock, s.power, s.reasons = 1650, 699, 0x4
				return s
			}}, []string{"gpu_clock_cap -"}, "8 of 8 GPUs run capped during the steps: SW power cap (worst: node-a gpu 0, SW power cap in 100% of its samples, up to 66 °C)"},
		{"XID 79 on rank 4", hwRun{gemmUS: even,
			state: func(rank int, at int64) gpuState {
				s := healthy(rank, at)
				if rank == 4 && at > 300_000 {
					s.xid = 79
				}
				return s
			}}, []string{"gpu_xid 4"}, ""},
		{"GPU 6 lost", hwRun{gemmUS: even,
			state: func(rank int, at int64) gpuState {
				s := healthy(rank, at)
				s.lost = rank == 6 && at > 500_000
				return s
			}}, []string{"gpu_xid 6"}, ""},
		{"rank 1 framebuffer 97% full", hwRun{gemmUS: even,
			state: func(rank int, at int64) gpuState {
				s := healthy(rank, at)
				if rank == 1 {
					s.usedMiB = 79_300
				}
				return s
			}}, []string{"gpu_mem_full 1"}, ""},
		// NCCL_P2P_DISABLE=1: 20 ms all-reduces between the host's GPUs
		// go over PCIe and host memory, NVLink reads near zero
		{"P2P off: NVLink idle, PCIe busy, long collectives", hwRun{gemmUS: even, xferUS: 20_000,
			state: func(rank int, at int64) gpuState {
				s := healthy(rank, at)
				s.nvlinkGBs, s.pcieGBs = 0.02, 9
				return s
			}}, []string{"gpu_link -"}, "node-a: the collective traffic of ranks 0, 1, 2, 3, 4, 5, 6, 7 goes over PCIe, not NVLink: NVLink 0.04 GB/s against a 900 GB/s link (0.0%), PCIe 18.0 GB/s, while the collectives transfer 14% of the steps"},
		{"rank 5's NVLink down, its traffic on PCIe", hwRun{gemmUS: even, xferUS: 20_000,
			state: func(rank int, at int64) gpuState {
				s := healthy(rank, at)
				s.nvlinkGBs = 60
				if rank == 5 {
					s.nvlinkGBs, s.pcieGBs = 0, 7
				}
				return s
			}}, []string{"gpu_link 5"}, "node-a: the collective traffic of rank 5 goes over PCIe, not NVLink: NVLink 0.00 GB/s against a 900 GB/s link (0.0%), PCIe 14.0 GB/s"},
		// distractors: long collectives that do use NVLink, and a busy PCIe
		// (input pipeline) beside a quiet NVLink with short collectives
		{"long collectives over NVLink", hwRun{gemmUS: even, xferUS: 20_000,
			state: func(rank int, at int64) gpuState {
				s := healthy(rank, at)
				s.nvlinkGBs = 60
				return s
			}}, nil, ""},
		{"PCIe busy with input, NVLink quiet, short collectives", hwRun{gemmUS: even,
			state: func(rank int, at int64) gpuState {
				s := healthy(rank, at)
				s.nvlinkGBs, s.pcieGBs = 0.05, 12
				return s
			}}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, res := analyzeDir(t, tc.run.write(t), "hw", detectors.Window{})
			rep, err := detectors.BuildReport(context.Background(), st, res)
			if err != nil {
				t.Fatal(err)
			}
			var got, msgs []string
			for _, f := range rep.Findings {
				if strings.HasPrefix(f.Detector, "gpu_") && f.Detector != "gpu_counters" && f.Category != "summary" &&
					f.Detector != "gpu_idle" && f.Detector != "gpu_gaps" && f.Detector != "gpu_time_util" {
					got = append(got, fmt.Sprintf("%s %v", f.Detector, rankOf(f.Rank)))
					msgs = append(msgs, f.Message)
				}
			}
			if tc.msg != "" && (len(msgs) == 0 || !strings.Contains(msgs[0], tc.msg)) {
				t.Errorf("messages %q, want one with %q", msgs, tc.msg)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("hardware findings %q, want %q", got, tc.want)
				for _, f := range rep.Findings {
					t.Logf("%s: %s", f.Detector, f.Message)
				}
			}
		})
	}
}

// rank_steps joins each step with what the GPU's counters read during it:
// rank 3's clock and throttling from step 3 on, its longer compute, and
// its peers' waiting.
func TestRankStepsJoinsCounters(t *testing.T) {
	st, _ := analyzeDir(t, throttledRank3().write(t), "rs", detectors.Window{})
	rows, err := st.Query(context.Background(), `SELECT rank, step, step_ns, compute_ns, comm_wait_ns, sm_clock_mhz, throttle_share, counter_samples
		FROM rank_steps WHERE run_id = 'rs' AND rank IN (0, 3) AND step IN (2, 4) ORDER BY rank, step`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var rank, step, samples int
		var stepNS, compute, wait int64
		var clock, share float64
		if err := rows.Scan(&rank, &step, &stepNS, &compute, &wait, &clock, &share, &samples); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("rank %d step %d: %d ms, compute %.1f ms, wait %.1f ms, %.0f MHz, throttled %.0f%%, %d samples",
			rank, step, stepNS/1e6, float64(compute)/1e6, float64(wait)/1e6, clock, 100*share, samples))
	}
	want := []string{
		// rank 0: eight GEMMs of 10 ms and an all-reduce; in step 2 it
		// waits 8 x 0.2 ms for rank 6 (a slightly slower part), in step 4
		// 8 x 4.286 ms for rank 3; samples at 150, 200 and 250 ms fall in
		// step 2 [140, 280)
		"rank 0 step 2: 140 ms, compute 80.0 ms, wait 1.6 ms, 1980 MHz, throttled 0%, 3 samples",
		"rank 0 step 4: 140 ms, compute 80.0 ms, wait 34.3 ms, 1980 MHz, throttled 0%, 3 samples",
		"rank 3 step 2: 140 ms, compute 80.0 ms, wait 1.6 ms, 1980 MHz, throttled 0%, 3 samples",
		"rank 3 step 4: 140 ms, compute 114.3 ms, wait 0.0 ms, 1386 MHz, throttled 100%, 3 samples",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rank_steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// bench/throttled8 is the throttled run saved for the Grafana plugin's
// tests and the demo: it must be what throttledRank3 writes (make golden
// rewrites it after a change).
func TestThrottledFixture(t *testing.T) {
	dir := throttledRank3().write(t)
	fixture := filepath.Join("..", "bench", "throttled8")
	if *update {
		if err := os.RemoveAll(fixture); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(fixture, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := filepath.Glob(filepath.Join(dir, "*"))
	got, _ := filepath.Glob(filepath.Join(fixture, "*"))
	if len(got) != len(want) {
		t.Fatalf("%s holds %d files, the generator writes %d (make golden)", fixture, len(got), len(want))
	}
	for _, w := range want {
		a, _ := os.ReadFile(w)
		b, err := os.ReadFile(filepath.Join(fixture, filepath.Base(w)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from the generator's (%v); make golden", filepath.Base(w), err)
		}
	}
}

// tensor_idle on a real trace (TraceLens' Qwen on an H100, whose matmuls
// mfu links to their operators) with a dcgm-exporter scrape placed in its
// window: a tensor pipe active 1% of the steps while matmuls take 18% of
// the GPU span is idle while they run; 15% is busy enough.
func TestTensorIdleOnRealTrace(t *testing.T) {
	trace := corpusDir("tracelens/tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
	cfg := detectors.Config{Thresholds: map[string]map[string]float64{"tensor_idle": {"min_matmul_pct": 10}}}
	ctx := context.Background()
	for _, tc := range []struct {
		tensor float64
		want   bool
	}{{0.01, true}, {0.15, false}} {
		dir := trace(t)
		st, _ := analyzeDir(t, dir, "q", detectors.Window{})
		var host string
		var device int
		var lo, hi int64
		if err := st.Conn().QueryRowContext(ctx, `SELECT r.host, min(s.device), min(s.ts), max(s.ts + s.dur) FROM slices_detail s JOIN ranks r USING (run_id, rank)
			WHERE s.kind = 'kernel' AND s.device IS NOT NULL GROUP BY r.host`).Scan(&host, &device, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		for ts := lo; ts <= hi; ts += max((hi-lo)/10, 1) {
			fmt.Fprintf(&sb, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu=\"%d\",Hostname=\"%s\"} %g %d\n", device, host, tc.tensor, ts/1_000_000)
		}
		if err := os.WriteFile(filepath.Join(dir, "dcgm.prom"), []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		st, res := analyzeDir(t, dir, "q", detectors.Window{}, cfg)
		for _, r := range res {
			if r.Err != nil {
				t.Errorf("%s: %v", r.Detector.Name, r.Err)
			}
		}
		var msgs []string
		rows, err := st.Query(ctx, `SELECT message FROM findings WHERE detector = 'tensor_idle'`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var m string
			rows.Scan(&m)
			msgs = append(msgs, m)
		}
		rows.Close()
		if got := len(msgs) == 1; got != tc.want {
			t.Errorf("tensor active %.2f: findings %q, want one: %v", tc.tensor, msgs, tc.want)
		}
		if tc.want && len(msgs) == 1 && !strings.Contains(msgs[0], "tensor pipe is active 4% of the time its matmul kernels run") {
			t.Errorf("message %q", msgs[0])
		}
	}
}

// With peer-to-peer off, the host's collectives go over PCIe: the report's
// first cause is that path, shown by gpu_link, and costs the transfer time.
func TestNVLinkBypassIsACause(t *testing.T) {
	run := hwRun{gemmUS: func(int, int) int64 { return 10_000 }, xferUS: 20_000,
		state: func(rank int, at int64) gpuState {
			s := healthy(rank, at)
			s.nvlinkGBs, s.pcieGBs = 0.02, 9
			return s
		}}
	st, res := analyzeDir(t, run.write(t), "p2p", detectors.Window{})
	rep, err := detectors.BuildReport(context.Background(), st, res)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Causes) == 0 {
		t.Fatal("no cause")
	}
	c := rep.Causes[0]
	if c.Kind != "slow_link" || c.Why != "pcie_path" || c.Host != "node-a" || len(c.Ranks) != hwRanks ||
		!strings.HasPrefix(c.Headline, "collectives on node-a bypass NVLink: up to 19.978 ms a step (14.3%) of transfer at PCIe bandwidth (NVLink 0.04 GB/s of its 900 GB/s, PCIe 18.0 GB/s)") {
		t.Fatalf("first cause %+v, want the PCIe path on node-a", c)
	}
	shown := false
	for _, id := range c.Shown {
		for _, f := range rep.Findings {
			shown = shown || f.ID == id && f.Detector == "gpu_link"
		}
	}
	if !shown {
		t.Errorf("cause shown by %v, want gpu_link", c.Shown)
	}
}
