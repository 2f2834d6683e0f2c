package nsys_test

import (
	"database/sql"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/ingest/kineto"
	"github.com/trainscope/trainscope/ingest/nsys"
)

// The synthetic exports below hold what the corpus files lack: steps, an
// NCCL kernel and NCCL NVTX range, a driver call, one process on two
// devices, a CUDA_VISIBLE_DEVICES remap, GPU metrics. Their tables carry
// a subset of the real columns, as older exports do.

const (
	base = int64(1_700_000_000_000_000_000)
	gA   = int64(100) << 24 // globalPid of process A (pid 100)
	gB   = int64(200) << 24 // globalPid of process B (pid 200)
)

var schema = []string{
	`CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)`,
	`CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT)`,
	`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, "end" INTEGER NOT NULL, deviceId INTEGER NOT NULL,
		contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,
		gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER,
		registersPerThread INTEGER, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER)`,
	`CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, "end" INTEGER, deviceId INTEGER, contextId INTEGER, streamId INTEGER,
		correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER)`,
	`CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, "end" INTEGER, deviceId INTEGER, contextId INTEGER, streamId INTEGER,
		correlationId INTEGER, globalPid INTEGER, value INTEGER, bytes INTEGER)`,
	`CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, "end" INTEGER, deviceId INTEGER, contextId INTEGER,
		streamId INTEGER, correlationId INTEGER, globalPid INTEGER, syncType INTEGER)`,
	`CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, "end" INTEGER, eventClass INTEGER, globalTid INTEGER,
		correlationId INTEGER, nameId INTEGER, returnValue INTEGER)`,
	`CREATE TABLE NVTX_EVENTS (start INTEGER, "end" INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER, textId INTEGER,
		domainId INTEGER)`,
	`CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER)`,
	`CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT)`,
	`CREATE TABLE TARGET_INFO_GPU (vmId INTEGER, id INTEGER, name TEXT, totalMemory INTEGER, smCount INTEGER, cuDevice INTEGER,
		computeMajor INTEGER, computeMinor INTEGER)`,
	`CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER, uuid TEXT, numMultiprocessors INTEGER)`,
	`CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER, sourceId INTEGER, typeName TEXT, metricId INTEGER, metricName TEXT)`,
	`CREATE TABLE GPU_METRICS (timestamp INTEGER, typeId INTEGER, metricId INTEGER, value INTEGER)`,
	`CREATE TABLE META_DATA_CAPTURE (name TEXT NOT NULL, value TEXT)`,
}

// fullExport: process A runs on devices 0 and 1 (contexts 1 and 2),
// process B on its device 0, which is physical GPU 1.
var fullExport = []string{
	`INSERT INTO StringIds VALUES (1, 'void gemm_kernel<float>(float*)'), (2, 'gemm_kernel'),
		(3, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)'), (4, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL'),
		(5, 'cudaLaunchKernel_v7000'), (6, 'cuLaunchKernel'), (7, 'cudaStreamSynchronize_v3020'), (8, 'main thread'),
		(9, 'registered range'), (10, 'cudaMemcpyAsync_v3020')`,
	`INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '2023-11-14T22:13:20')`,
	// NVTX: domain, two ProfilerSteps, an emit_nvtx operator, an NCCL
	// range, a registered string, an unterminated range and a mark
	`INSERT INTO NVTX_EVENTS VALUES
		(0, NULL, 75, 'NCCL', NULL, NULL, 1),
		(1000, 2000, 59, 'ProfilerStep#1', 1677721700, NULL, 0),
		(2000, 3000, 59, 'ProfilerStep#2', 1677721700, NULL, 0),
		(1100, 1200, 59, 'aten::mm, seq = 3, op_id = 7, sizes = [[2, 3], [3, 4]]', 1677721700, NULL, 0),
		(1300, 1400, 59, 'ncclAllReduce', 1677721701, NULL, 1),
		(2100, 2200, 60, NULL, 1677721700, 9, 0),
		(2300, NULL, 59, 'never popped', 1677721700, NULL, 0),
		(2400, 2400, 34, 'a mark', 1677721700, NULL, 0)`,
	`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
		(1150, 1160, 0, 1677721700, 10, 5, 0),
		(2100, 2110, 1, 1677721700, 11, 6, 0),
		(2200, 2950, 0, 1677721700, 12, 7, 0),
		(1250, 1260, 0, 1677721700, 13, 10, 0)`,
	`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
		(1500, 1600, 0, 1, 7, 10, 1677721600, 1, 2, 64, 2, 1, 128, 1, 1, 32, 1024, 2048),
		(2500, 2900, 1, 2, 9, 11, 1677721600, 3, 4, 8, 1, 1, 512, 1, 1, 96, 0, 0),
		(1700, 1800, 0, 3, 7, 20, 3355443200, 1, 2, 1, 1, 1, 1, 1, 1, 8, 0, 0)`,
	`INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1300, 1350, 0, 1, 7, 13, 1677721600, 4096, 1, 0, 2)`,
	`INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (1400, 1410, 0, 3, 7, 21, 3355443200, 0, 64)`,
	`INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (2900, 2950, 0, 2, 9, 12, 1677721600, 3)`,
	`INSERT INTO ThreadNames VALUES (8, 0, 1677721700)`,
	`INSERT INTO PROCESSES VALUES (1677721600, 100, 'python'), (3355443200, 200, 'python'), (4294967296, 300, 'launcher')`,
	`INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA H100 80GB HBM3', 85000000000, 132, 0, 9, 0),
		(0, 1, 'NVIDIA H100 80GB HBM3', 85000000000, 132, 1, 9, 0)`,
	`INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 100, '', 132), (1, 1, 100, '', 132), (1, 0, 200, '', 132)`,
	`INSERT INTO TARGET_INFO_GPU_METRICS VALUES (256, 0, 'GPU', 5, 'SMs Active [Throughput %]'),
		(257, 1, 'GPU', 5, 'SMs Active [Throughput %]')`,
	`INSERT INTO GPU_METRICS VALUES (1000, 256, 5, 50), (1000, 257, 5, 70), (-5, 257, 5, 1)`,
}

// oneKernel is an export's only GPU work: process A, device 0.
const oneKernel = `INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1500, 1600, 0, 1, 7, 10, 1677721600, 1, 2, 64, 2, 1, 128, 1, 1, 32, 1024, 2048)`

// writeExport creates an SQLite file from statements.
func writeExport(t *testing.T, path string, stmts ...[]string) string {
	t.Helper()
	abs, _ := filepath.Abs(path)
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: abs}).EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, list := range stmts {
		for _, s := range list {
			if _, err := db.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	return path
}

// writeExportArgs creates an SQLite file from the schema, fixed rows and
// parameterized statements (stmts[i] with args[i]).
func writeExportArgs(t *testing.T, path string, schema, fixed, stmts []string, args [][]any) {
	t.Helper()
	writeExport(t, path, schema, fixed)
	abs, _ := filepath.Abs(path)
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: abs}).EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, s := range stmts {
		if _, err := db.Exec(s, args[i]...); err != nil {
			t.Fatalf("%s %v: %v", s, args[i], err)
		}
	}
}

// rowsOf lists a trace's rows of one kind by name.
func rowsOf(tr *kineto.Trace, kind string) map[string]int {
	out := map[string]int{}
	s := tr.Slices
	for i := range s.Len() {
		if tr.Str.Get(s.Kind.V[i]) == kind {
			out[tr.Str.Get(s.Name.V[i])] = i
		}
	}
	return out
}

func TestSynthetic(t *testing.T) {
	path := writeExport(t, filepath.Join(t.TempDir(), "job.sqlite"), schema, fullExport)
	trs, err := nsys.ReadFile(path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(trs) != 3 {
		t.Fatalf("%d traces, want 3", len(trs))
	}
	for i, tr := range trs {
		if tr.Rank != int32(i) || tr.RankSource != nsys.RankFromOrder || tr.Dist.WorldSize != 3 || tr.BaseTimeNS != base {
			t.Errorf("trace %d: rank %d from %s, world %d, base %d", i, tr.Rank, tr.RankSource, tr.Dist.WorldSize, tr.BaseTimeNS)
		}
		if tr.GPUName() != "NVIDIA H100 80GB HBM3" || tr.Devices[0].NumSMs != 132 {
			t.Errorf("trace %d: devices %+v", i, tr.Devices)
		}
	}
	a0, a1, b0 := trs[0], trs[1], trs[2]

	// steps: from A's ProfilerStep ranges, on both of A's devices
	for _, tr := range []*kineto.Trace{a0, a1} {
		st := tr.Steps
		if st.Len() != 2 || st.Step.V[0] != 1 || st.Start.V[0] != base+1000 || st.End.V[1] != base+3000 {
			t.Errorf("rank %d steps %v %v %v", tr.Rank, st.Step.V, st.Start.V, st.End.V)
		}
	}
	if b0.Steps.Len() != 0 {
		t.Errorf("process B has no steps, got %d", b0.Steps.Len())
	}

	num, str := detail(a0)
	k := rowsOf(a0, "kernel")["void gemm_kernel<float>(float*)"]
	if v, _ := num("launch_ts", k); v != base+1150 {
		t.Errorf("gemm launch_ts %d", v)
	}
	if v, _ := num("step", k); v != 1 {
		t.Errorf("gemm step %d", v)
	}
	if v, _ := num("shared_mem", k); v != 3072 {
		t.Errorf("shared memory %d, want static + dynamic", v)
	}
	if v, _ := num("grid_x", k); v != 64 {
		t.Errorf("grid_x %d", v)
	}
	// the sync call launched nothing: it stays on A's first device
	rt := rowsOf(a0, "runtime")
	for _, name := range []string{"cudaLaunchKernel", "cudaStreamSynchronize", "cudaMemcpyAsync"} {
		if _, ok := rt[name]; !ok || len(rt) != 3 {
			t.Errorf("runtime rows on A's device 0: %v, want %s among 3", rt, name)
		}
	}
	mc := rowsOf(a0, "memcpy")["Memcpy HtoD (Pageable -> Device)"]
	if str("copy_kind", mc) != "HtoD" || str("host_mem", mc) != "pageable" {
		t.Errorf("memcpy %q %q", str("copy_kind", mc), str("host_mem", mc))
	}
	op := rowsOf(a0, "cpu_op")["aten::mm"]
	if v, _ := num("self_dur", op); v != 90 {
		t.Errorf("aten::mm self time %d, want 100 - the 10 of its cudaLaunchKernel", v)
	}
	ann := rowsOf(a0, "annotation")
	if _, ok := ann["registered range"]; !ok || len(ann) != 4 {
		t.Errorf("annotations %v", ann)
	}
	if c := str("coll_name", ann["ncclAllReduce"]); c != "allreduce" {
		t.Errorf("ncclAllReduce range: collective %q", c)
	}
	if a0.Counts["nvtx_unterminated"] != 1 || a0.ThreadNames[100] != "main thread" || a0.ProcessNames[100] != "python" {
		t.Errorf("counts %v threads %v processes %v", a0.Counts, a0.ThreadNames, a0.ProcessNames)
	}
	if a0.Counters.Len() != 1 || a0.Counters.Value.V[0] != 50 || a0.Counters.TS.V[0] != base+1000 ||
		a0.Str.Get(a0.Counters.Metric.V[0]) != "SMs Active [Throughput %]" {
		t.Errorf("A device 0 counters: %v", a0.Counters.Value.V)
	}

	// A's device 1: the NCCL kernel, the driver call that launched it, the
	// stream sync on its context
	num, str = detail(a1)
	c := rowsOf(a1, "comm")["ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"]
	if str("coll_name", c) != "allreduce" || str("coll_algo", c) != "RING" || str("coll_proto", c) != "LL" {
		t.Errorf("nccl kernel: %q %q %q", str("coll_name", c), str("coll_algo", c), str("coll_proto", c))
	}
	if v, ok := num("step", c); !ok || v != 2 {
		t.Errorf("nccl kernel step %d %v: its launch is in step 2", v, ok)
	}
	if _, ok := rowsOf(a1, "driver")["cuLaunchKernel"]; !ok || a1.Dist.Backend != "nccl" {
		t.Errorf("driver rows %v, backend %q", rowsOf(a1, "driver"), a1.Dist.Backend)
	}
	if s := rowsOf(a1, "sync"); len(s) != 1 || a1.Slices.Device.V[s["Stream Sync"]] != 1 {
		t.Errorf("sync rows %v", s)
	}
	if a1.Counters.Len() != 1 || a1.Counters.Value.V[0] != 70 {
		t.Errorf("A device 1 counters: %v", a1.Counters.Value.V)
	}

	// B: CUDA device 0 is physical GPU 1, so GPU 1's metrics are its
	num, str = detail(b0)
	ms := rowsOf(b0, "memset")["Memset (Device)"]
	if v, _ := num("bytes", ms); v != 64 {
		t.Errorf("memset bytes %d", v)
	}
	if b0.Counters.Len() != 1 || b0.Counters.Value.V[0] != 70 || b0.Counters.Device.V[0] != 0 {
		t.Errorf("B counters %v on device %v", b0.Counters.Value.V, b0.Counters.Device.V)
	}
	if _, ok := num("launch_ts", rowsOf(b0, "kernel")["void gemm_kernel<float>(float*)"]); ok {
		t.Error("B's kernel has no launching call in the export")
	}
}

func TestRankMapping(t *testing.T) {
	dir := t.TempDir()
	full := writeExport(t, filepath.Join(dir, "job.sqlite"), schema, fullExport)
	trs, err := nsys.ReadFile(full, nsys.Options{FirstRank: 8})
	if err != nil || trs[0].Rank != 8 || trs[2].Rank != 10 || trs[0].Dist.WorldSize != 0 {
		t.Errorf("FirstRank 8: %v, ranks %d..%d, world %d", err, trs[0].Rank, trs[2].Rank, trs[0].Dist.WorldSize)
	}
	swap := func(g nsys.GPU) (int, bool) {
		if g.PID == 200 {
			return 0, true
		}
		return g.Index + 1, true
	}
	trs, err = nsys.ReadFile(full, nsys.Options{RankOf: swap})
	if err != nil || trs[0].TraceName != "python (pid 200) device 0" || trs[0].RankSource != nsys.RankFromOption {
		t.Errorf("RankOf: %v, rank 0 is %q from %s", err, trs[0].TraceName, trs[0].RankSource)
	}
	_, err = nsys.ReadFile(full, nsys.Options{RankOf: func(nsys.GPU) (int, bool) { return 1, true }})
	if err == nil || !strings.Contains(err.Error(), "rank 1 given to both") {
		t.Errorf("one rank for every GPU: %v", err)
	}

	// one GPU: the capture environment, else the file name, else a default
	// rank the loader may renumber
	oneGPU := []string{fullExport[0], fullExport[1], oneKernel}
	env := []string{`INSERT INTO META_DATA_CAPTURE VALUES ('PROCESS_0:COMMAND', 'python'),
		('PROCESS_0:ENVIRONMENT_VARIABLE', 'RANK="3"'), ('PROCESS_0:ENVIRONMENT_VARIABLE', 'WORLD_SIZE="8"')`}
	for _, c := range []struct {
		name  string
		stmts [][]string
		rank  int32
		src   string
		world int
	}{
		{"report.sqlite", [][]string{schema, oneGPU, env}, 3, nsys.RankFromEnv, 8},
		{"run_rank5.sqlite", [][]string{schema, oneGPU}, 5, nsys.RankFromName, 0},
		{"report.sqlite", [][]string{schema, oneGPU}, 0, nsys.RankDefault, 0},
	} {
		p := writeExport(t, filepath.Join(t.TempDir(), c.name), c.stmts...)
		trs, err := nsys.ReadFile(p, nsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(trs) != 1 || trs[0].Rank != c.rank || trs[0].RankSource != c.src || trs[0].Dist.WorldSize != c.world {
			t.Errorf("%s: %d traces, rank %d from %s, world %d; want %d from %s, %d", c.name, len(trs), trs[0].Rank,
				trs[0].RankSource, trs[0].Dist.WorldSize, c.rank, c.src, c.world)
		}
	}
}

// TestNoSessionStart: without TARGET_INFO_SESSION_START_TIME, times stay
// relative to the session start and the trace says it has no time base.
func TestNoSessionStart(t *testing.T) {
	p := writeExport(t, filepath.Join(t.TempDir(), "old.sqlite"), schema, []string{fullExport[0], oneKernel})
	trs, err := nsys.ReadFile(p, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := trs[0]
	if tr.HasBaseTime || tr.BaseTimeNS != 0 || tr.Slices.TS.V[0] != 1500 {
		t.Errorf("base %v %d, first ts %d", tr.HasBaseTime, tr.BaseTimeNS, tr.Slices.TS.V[0])
	}
}
