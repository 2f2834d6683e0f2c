package timeline_test

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/bench/gpusim"
	"github.com/trainscope/trainscope/ingest/kineto"
	"github.com/trainscope/trainscope/stream"
)

// checkTiling: the windows of a rank tile its timeline (each starts where
// the one before ended), and within a window the rows add up to its
// length, every row inside it.
func checkTiling(t *testing.T, name string, rows []stream.AccountRow) {
	t.Helper()
	type win struct{ start, end, sum int64 }
	wins := map[int32]*win{}
	var order []int32
	for _, r := range rows {
		w := wins[r.Step]
		if w == nil {
			w = &win{start: r.StartNS, end: r.EndNS}
			wins[r.Step] = w
			order = append(order, r.Step)
		}
		if r.StartNS != w.start || r.EndNS != w.end {
			t.Fatalf("%s: step %d has two windows", name, r.Step)
		}
		if r.NS <= 0 || r.Count <= 0 || r.LongNS > r.NS || r.FirstNS < r.StartNS || r.FirstNS >= r.EndNS {
			t.Errorf("%s: step %d: a bad row %+v", name, r.Step, r)
		}
		w.sum += r.NS
	}
	for i, s := range order {
		w := wins[s]
		if w.sum != w.end-w.start {
			t.Errorf("%s: step %d: rows add up to %d ns, its window is %d ns", name, s, w.sum, w.end-w.start)
		}
		if i > 0 && w.start != wins[order[i-1]].end {
			t.Errorf("%s: step %d starts at %d, step %d ended at %d", name, s, w.start, order[i-1], wins[order[i-1]].end)
		}
	}
}

func read(t *testing.T, raw []byte) *kineto.Trace {
	t.Helper()
	tr, err := kineto.Read(bytes.NewReader(raw), "rank-0.pt.trace.json", kineto.Options{RunID: "x", Rank: -1})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// ev is one complete event of a hand-made trace: host events on pid 1,
// thread 1; kernels on pid 0, stream 7 (its correlation links it to its
// launch).
func ev(cat, name string, ts, dur float64, corr int) string {
	args, pid, tid := "", 1, 1
	if corr > 0 {
		args = fmt.Sprintf(`, "args": {"correlation": %d, "stream": 7, "device": 0}`, corr)
	}
	if cat == "kernel" {
		pid, tid = 0, 7
	}
	return fmt.Sprintf(`{"ph": "X", "cat": %q, "name": %q, "pid": %d, "tid": %d, "ts": %g, "dur": %g%s}`, cat, name, pid, tid, ts, dur, args)
}

// perStep sums a category and cause over the complete steps, per step.
func perStep(rows []stream.AccountRow, category, cause string) (total float64, steps int, subjects map[string]int64) {
	seen := map[int32]bool{}
	subjects = map[string]int64{}
	for _, r := range rows {
		if !r.StepComplete {
			continue
		}
		seen[r.Step] = true
		if r.Category == category && r.Cause == cause {
			total += float64(r.NS)
			subjects[r.Subject] += r.NS
		}
	}
	return total / float64(max(len(seen), 1)), len(seen), subjects
}

// Each simulated scenario's account holds its fault where it belongs: the
// stall as host work of one step named by its frame, the loader as input,
// the syncs as sync named aten::item, the pageable copy as exposed copies,
// the tiny model's idle as launch; and the healthy job as compute.
func TestScenarioAccounts(t *testing.T) {
	for _, sc := range gpusim.Scenarios {
		t.Run(string(sc), func(t *testing.T) {
			raw, _ := gpusim.Trace(gpusim.Options{Scenario: sc, Seed: 3})
			tr := read(t, raw)
			rows := tr.Account
			checkTiling(t, string(sc), rows)
			compute, steps, _ := perStep(rows, stream.AccountCompute, "kernels")
			if steps != 6 {
				t.Fatalf("%d complete steps, want 6", steps)
			}
			ms := func(ns float64) float64 { return ns / 1e6 }
			switch sc {
			case gpusim.Healthy:
				if compute < 10e6 {
					t.Errorf("compute %.2f ms a step", ms(compute))
				}
			case gpusim.StallOnce:
				var stall stream.AccountRow
				for _, r := range rows {
					if r.Category == stream.AccountIdle && r.NS > stall.NS {
						stall = r
					}
				}
				if stall.Cause != "host" || !strings.Contains(stall.Subject, "save_checkpoint_metadata") || stall.NS < 100e6 || stall.Step != 5 {
					t.Errorf("the largest idle row: %+v", stall)
				}
			case gpusim.SlowInput:
				in, _, subj := perStep(rows, stream.AccountIdle, "input")
				if in < 40e6 || subj["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] == 0 {
					t.Errorf("input %.2f ms a step, by %v", ms(in), subj)
				}
			case gpusim.Sync:
				sync, _, subj := perStep(rows, stream.AccountIdle, "sync")
				if sync < 3e6 || subj["aten::item"] < int64(0.9*sync*6) {
					t.Errorf("sync %.2f ms a step, by %v", ms(sync), subj)
				}
			case gpusim.PageableH2D:
				cp, _, _ := perStep(rows, stream.AccountCopy, "HtoD pageable")
				if cp < 50e6 {
					t.Errorf("pageable copies %.2f ms a step", ms(cp))
				}
			case gpusim.FP32:
				if compute < 100e6 {
					t.Errorf("FP32 compute %.2f ms a step", ms(compute))
				}
			case gpusim.LaunchBound:
				launch, _, _ := perStep(rows, stream.AccountIdle, "launch")
				if launch < 3*compute {
					t.Errorf("launch idle %.2f ms against compute %.2f ms a step", ms(launch), ms(compute))
				}
			}
		})
	}
}

// A hand-made timeline where every idle cause is known: the GPU waits for
// the launch of k1 (its call, then the queue until it starts: launch); for
// the launch of k2 while the host is in an operator without launches
// (host), then in the data loader (input), then in nothing (unrecorded);
// k3 runs, the host blocks in cudaStreamSynchronize under aten::item until
// the GPU drains, then does Python work before launching k4 (all sync).
func TestIdleCauses(t *testing.T) {
	events := []string{
		ev("user_annotation", "ProfilerStep#1", 0, 1000, 0),
		ev("cuda_runtime", "cudaLaunchKernel", 10, 5, 1),
		ev("kernel", "k1", 20, 80, 1), // busy 20-100
		ev("cpu_op", "aten::compute_on_host", 90, 50, 0),
		ev("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 150, 100, 0),
		// 250-300: nothing recorded
		ev("cpu_op", "aten::add", 300, 20, 0),
		ev("cuda_runtime", "cudaLaunchKernel", 310, 5, 2),
		ev("kernel", "k2", 320, 100, 2), // busy 320-420; idle 100-320 waits for k2's launch
		ev("cuda_runtime", "cudaLaunchKernel", 330, 5, 3),
		ev("kernel", "k3", 420, 100, 3), // busy 420-520
		ev("cpu_op", "aten::item", 340, 190, 0),
		ev("cuda_runtime", "cudaStreamSynchronize", 345, 180, 0), // returns at 525, 5 us after the drain
		ev("python_function", "train.py(40): log_value", 540, 300, 0),
		ev("cuda_runtime", "cudaLaunchKernel", 900, 5, 4),
		ev("kernel", "k4", 910, 50, 4), // idle 520-910: sync
	}
	tr := read(t, []byte(`{"traceEvents": [`+strings.Join(events, ",\n")+`]}`))
	checkTiling(t, "hand-made", tr.Account)
	got := map[string]int64{}
	for _, r := range tr.Account {
		got[r.Category+"/"+r.Cause+"/"+r.Subject] += r.NS
	}
	want := map[string]int64{
		"compute/kernels/":                40_000 + 80_000 + 200_000 + 50_000 - 40_000, // k1, k2 and k3, k4
		"idle/host/aten::compute_on_host": 40_000,                                      // 100-140: the op (90-140) while the GPU is idle
		"idle/input/enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__": 100_000,
		// 0-10 before k1's launch, 140-150, 250-300: inside the step's
		// range (a container, not work) but in no event
		"idle/unrecorded/": 70_000,
		// 10-20: k1's launch call, in no operator, and its latency
		"idle/launch/cudaLaunchKernel": 10_000,
		"idle/launch/aten::add":        20_000, // 300-320, the operator that launches k2
		"idle/sync/aten::item":         390_000,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d ns, want %d", k, got[k], v)
		}
	}
	var total int64
	for _, v := range got {
		total += v
	}
	if total != 960_000 {
		t.Errorf("%d ns in all, want the window 0-960 us", total)
	}
}

// Every real trace of the corpus gives an account whose windows tile its
// timeline and whose rows add up.
func TestCorpusAccounts(t *testing.T) {
	files := corpus.Glob(t, "kineto/*/*.json*")
	n := 0
	for _, f := range files {
		tr, err := kineto.ReadFile(f, kineto.Options{RunID: "x", Rank: -1})
		if err != nil {
			continue // not a trace (an execution trace, a memory timeline): their own tests say so
		}
		checkTiling(t, f, tr.Account)
		if len(tr.Account) > 0 {
			n++
		}
	}
	if n < 15 {
		t.Errorf("only %d corpus traces have an account", n)
	}
}

// A GPU-bound job's capture begins with the GPU still running work
// launched before it (no launch in the trace, so no step): that backlog
// ran during the first recorded step's host time but is not that step's.
// Without the first window starting after it, the first step looked a
// 2.5x stall of "compute" (fp32 on an H100, bench/gpu).
func TestBacklogBeforeTheCapture(t *testing.T) {
	var events []string
	// launched before the capture: correlations 1-3, no launch call here
	for i := range 3 {
		events = append(events, ev("kernel", "backlog", 5+float64(i)*100, 100, 1+i))
	}
	// three steps of 100 us of host time, each launching 300 us of kernels
	// (the host runs ahead, then waits in its launches)
	corr := 10
	gpu := 305.0
	for step := range 3 {
		host := float64(step) * 100
		events = append(events, ev("user_annotation", fmt.Sprintf("ProfilerStep#%d", step+3), host, 100, 0))
		for k := range 3 {
			events = append(events, ev("cuda_runtime", "cudaLaunchKernel", host+float64(k)*30+1, 5, corr))
			events = append(events, ev("kernel", "gemm", gpu, 100, corr))
			gpu += 100
			corr++
		}
	}
	tr := read(t, []byte(`{"traceEvents": [`+strings.Join(events, ",\n")+`]}`))
	checkTiling(t, "backlog", tr.Account)
	lens := map[int32]int64{}
	compute := map[int32]int64{}
	for _, r := range tr.Account {
		lens[r.Step] = r.EndNS - r.StartNS
		if r.Category == "compute" {
			compute[r.Step] += r.NS
		}
	}
	for step := int32(3); step <= 5; step++ {
		if lens[step] != 300_000 || compute[step] != 300_000 {
			t.Errorf("step %d: window %d ns with %d ns of compute, want 300 us of its own kernels", step, lens[step], compute[step])
		}
	}
}

// idleByCause reads a hand-made trace of events, checks that its account
// tiles each step, and sums its idle by cause.
func idleByCause(t *testing.T, name string, events []string) map[string]int64 {
	t.Helper()
	tr := read(t, []byte(`{"traceEvents": [`+strings.Join(events, ",\n")+`]}`))
	checkTiling(t, name, tr.Account)
	got := map[string]int64{}
	for _, r := range tr.Account {
		if r.Category == "idle" {
			got[r.Cause] += r.NS
		}
	}
	return got
}

// A launch call slowed by the profiler (CUPTI on: tens of us) while the
// GPU runs dry is launch overhead, not a sync: only a call that can wait
// for the GPU (a synchronize, a blocking copy) drains it. Before, a tiny
// MLP traced on an H100 had 9.7 ms a step of "syncs" in aten::addcdiv_.
func TestSlowLaunchIsNoSync(t *testing.T) {
	for _, c := range []struct {
		call, cause string
	}{
		{"cudaLaunchKernel", "launch"},
		{"cuLaunchKernelEx", "launch"},
		{"cudaStreamSynchronize", "sync"},
	} {
		events := []string{
			ev("user_annotation", "ProfilerStep#1", 0, 300, 0),
			ev("cuda_runtime", "cudaLaunchKernel", 1, 4, 1),
			ev("kernel", "k1", 10, 40, 1), // busy 10-50
			ev("cpu_op", "aten::addcdiv_", 40, 60, 0),
			// the GPU runs dry at 50 inside this 50 us call
			ev("cuda_runtime", c.call, 45, 50, 0),
			ev("cuda_runtime", "cudaLaunchKernel", 110, 4, 2),
			ev("kernel", "k2", 120, 40, 2),
		}
		got := idleByCause(t, c.call, events)
		if c.cause == "sync" && got["sync"] != 70_000 {
			t.Errorf("%s: %v ns of idle by cause, want the 70 us from 50 to 120 as sync", c.call, got)
		}
		if c.cause == "launch" && got["sync"] != 0 {
			t.Errorf("%s: %v ns of idle by cause, want no sync", c.call, got)
		}
	}
}

// A synchronization that finds the queue nearly drained returns in
// microseconds; the GPU then waits for all the host does on the value
// before its next launch (the H100 sync scenario: .item() then 0.5 ms of
// Python, 8 us in cudaStreamSynchronize). That idle is the sync's; a
// short call of another kind is not a sync, and neither is a launch.
func TestShortSyncDrains(t *testing.T) {
	for _, c := range []struct {
		call       string
		dur        float64
		wantSyncNS int64
	}{
		{"cudaStreamSynchronize", 8, 500_000},
		{"cudaDeviceSynchronize", 6, 500_000},
		{"cudaMemcpy", 9, 500_000},
		{"cudaEventQuery", 8, 0},
		{"cudaLaunchKernel", 8, 0},
	} {
		events := []string{
			ev("user_annotation", "ProfilerStep#1", 0, 700, 0),
			ev("cuda_runtime", "cudaLaunchKernel", 1, 4, 1),
			ev("kernel", "k1", 10, 45, 1), // busy 10-55
			ev("cpu_op", "aten::item", 40, 30, 0),
			ev("cuda_runtime", c.call, 50, c.dur, 0), // the GPU runs dry at 55
			// Python on the value, launching nothing
			ev("python_function", "train.py(97): busy", 70, 480, 0),
			ev("cuda_runtime", "cudaLaunchKernel", 550, 4, 2),
			ev("kernel", "k2", 555, 40, 2),
		}
		got := idleByCause(t, c.call, events)
		if got["sync"] != c.wantSyncNS {
			t.Errorf("%s of %d us: %v ns of idle by cause, want %d ns of sync (55 to 555)", c.call, int(c.dur), got, c.wantSyncNS)
		}
	}
}

// Exposed communication is named by its collective (the trace's
// "Collective name", else what the reader reads in the kernel's name), as
// copies are by their kind:
// the verdict's cause of a one-rank trace says which collective the GPU
// waited on.
func TestExposedCommNamesItsCollective(t *testing.T) {
	nccl := func(name, coll string, ts, dur float64, corr int) string {
		args := fmt.Sprintf(`"correlation": %d, "stream": 9, "device": 0`, corr)
		if coll != "" {
			args += fmt.Sprintf(`, "Collective name": %q, "Group size": 8`, coll)
		}
		return fmt.Sprintf(`{"ph": "X", "cat": "kernel", "name": %q, "pid": 0, "tid": 9, "ts": %g, "dur": %g, "args": {%s}}`, name, ts, dur, args)
	}
	events := []string{
		ev("user_annotation", "ProfilerStep#1", 0, 400, 0),
		ev("cuda_runtime", "cudaLaunchKernel", 1, 4, 1),
		ev("kernel", "gemm", 10, 100, 1), // compute 10-110
		ev("cuda_runtime", "cudaLaunchKernel", 5, 4, 2),
		nccl("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "allreduce", 60, 150, 2), // alone 110-210
		ev("cuda_runtime", "cudaLaunchKernel", 6, 4, 3),
		nccl("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "", 210, 40, 3), // alone 210-250
		ev("cuda_runtime", "cudaLaunchKernel", 7, 4, 4),
		ev("kernel", "gemm", 250, 100, 4),
	}
	tr := read(t, []byte(`{"traceEvents": [`+strings.Join(events, ",\n")+`]}`))
	checkTiling(t, "comm", tr.Account)
	got := map[string]int64{}
	for _, r := range tr.Account {
		if r.Category == stream.AccountComm {
			got[r.Subject] += r.NS
		}
	}
	// the reader names a collective without the argument from its kernel
	want := map[string]int64{"allreduce": 100_000, "sendrecv": 40_000}
	if !maps.Equal(got, want) {
		t.Errorf("exposed communication by subject %v, want %v", got, want)
	}
}
