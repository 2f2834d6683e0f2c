package nsys_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/ingest/kineto"
	"github.com/trainscope/trainscope/ingest/nsys"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// corpusFiles are real exports, in the corpus's nsys folder.
var corpusFiles = []string{"mock.sqlite", "h100_2gpu_1s.sqlite"}

// corpusFile is the corpus export name, unpacked into a shared cache: a
// test that changes it works on a copy.
func corpusFile(t *testing.T, name string) string {
	t.Helper()
	return corpus.Path(t, "nsys/"+name)
}

// rawDB opens an export with the same driver, for counts that do not go
// through the reader.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: abs}).EscapedPath()+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func query1[T any](t *testing.T, db *sql.DB, q string, args ...any) T {
	t.Helper()
	var v T
	if err := db.QueryRow(q, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

func hasTable(t *testing.T, db *sql.DB, name string) bool {
	return query1[int](t, db, "SELECT count(*) FROM sqlite_master WHERE name = ?", name) > 0
}

// kindRows counts a trace's slices by kind from the table itself.
func kindRows(tr *kineto.Trace) map[string]int {
	out := map[string]int{}
	for _, id := range tr.Slices.Kind.V {
		out[tr.Str.Get(id)]++
	}
	return out
}

type gpuKey struct{ gpid, dev int64 }

// TestCorpusCounts checks every trace's rows per kind against counts taken
// with plain SQL, and that ranks follow (globalPid, deviceId) order.
func TestCorpusCounts(t *testing.T) {
	for _, name := range corpusFiles {
		t.Run(name, func(t *testing.T) {
			path := corpusFile(t, name)
			trs, err := nsys.ReadFile(path, nsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			db := rawDB(t, path)
			var gpus []gpuKey
			rows, err := db.Query(`SELECT globalPid, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL
				UNION SELECT globalPid, deviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY 1, 2`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var k gpuKey
				if err := rows.Scan(&k.gpid, &k.dev); err != nil {
					t.Fatal(err)
				}
				gpus = append(gpus, k)
			}
			rows.Close()
			if len(trs) != len(gpus) {
				t.Fatalf("%d traces, want one per (process, device): %v", len(trs), gpus)
			}
			for i, tr := range trs {
				g := gpus[i]
				if tr.Rank != int32(i) || tr.Format != nsys.Format || !tr.HasBaseTime {
					t.Errorf("trace %d: rank %d (%s), format %s, base %v", i, tr.Rank, tr.RankSource, tr.Format, tr.HasBaseTime)
				}
				got := kindRows(tr)
				want := map[string]int{}
				want["kernel"] = query1[int](t, db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid = ? AND deviceId = ?", g.gpid, g.dev)
				want["memcpy"] = query1[int](t, db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE globalPid = ? AND deviceId = ?", g.gpid, g.dev)
				if hasTable(t, db, "CUPTI_ACTIVITY_KIND_MEMSET") {
					want["memset"] = query1[int](t, db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE globalPid = ? AND deviceId = ?", g.gpid, g.dev)
				}
				// one device per process in both files: every host row of
				// the process is this trace's
				want["sync"] = query1[int](t, db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE globalPid = ?", g.gpid)
				rt := "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid / 16777216 = ? / 16777216 AND eventClass = ?"
				want["runtime"] = query1[int](t, db, rt, g.gpid, 0)
				want["driver"] = query1[int](t, db, rt, g.gpid, 1)
				if hasTable(t, db, "NVTX_EVENTS") {
					want["nvtx"] = query1[int](t, db, `SELECT count(*) FROM NVTX_EVENTS WHERE globalTid / 16777216 = ? / 16777216
						AND eventType IN (59, 60) AND "end" IS NOT NULL`, g.gpid)
				}
				got["kernel"] += got["comm"]
				got["nvtx"] = got["annotation"] + got["cpu_op"]
				for k, w := range want {
					if got[k] != w {
						t.Errorf("rank %d (pid %d device %d): %d %s rows, SQL counts %d", tr.Rank, g.gpid>>24&0xFFFFFF, g.dev, got[k], k, w)
					}
					if c := tr.Counts["kind:"+k]; k != "nvtx" && k != "kernel" && c != w {
						t.Errorf("rank %d: Counts[kind:%s] = %d, want %d", tr.Rank, k, c, w)
					}
				}
				if tr.Counts["events"] != tr.Slices.Len()+tr.Counters.Len() {
					t.Errorf("rank %d: Counts[events] %d, slices %d", tr.Rank, tr.Counts["events"], tr.Slices.Len())
				}
				t.Logf("rank %d %s: %v, %d detail rows, %d threads", tr.Rank, tr.TraceName, got, tr.Slices.DetailRows(), len(tr.ThreadNames))
			}
		})
	}
}

// TestCorpusTimes: every timestamp is ns since the epoch, inside the
// capture session the export records.
func TestCorpusTimes(t *testing.T) {
	for _, name := range corpusFiles {
		t.Run(name, func(t *testing.T) {
			path := corpusFile(t, name)
			trs, err := nsys.ReadFile(path, nsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			db := rawDB(t, path)
			start := query1[int64](t, db, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")
			end := start + query1[int64](t, db, "SELECT duration FROM ANALYSIS_DETAILS")
			for _, tr := range trs {
				if tr.BaseTimeNS != start {
					t.Errorf("rank %d: base %d, want %d", tr.Rank, tr.BaseTimeNS, start)
				}
				s := tr.Slices
				for i, ts := range s.TS.V {
					if ts < start || ts+s.Dur.V[i] > end {
						t.Fatalf("rank %d row %d (%s): [%d, %d] outside the session [%d, %d]", tr.Rank, i,
							tr.Str.Get(s.Name.V[i]), ts, ts+s.Dur.V[i], start, end)
					}
				}
				if tr.StartNS < start || tr.EndNS > end || tr.StartNS >= tr.EndNS {
					t.Errorf("rank %d: span [%d, %d] outside [%d, %d]", tr.Rank, tr.StartNS, tr.EndNS, start, end)
				}
			}
		})
	}
}

// findRow finds the slice of a device row by its start and correlation id.
func findRow(t *testing.T, tr *kineto.Trace, ts, corr int64) int {
	t.Helper()
	s := tr.Slices
	for i := range s.Len() {
		if s.TS.V[i] == ts && s.Correlation.Valid(i) && s.Correlation.V[i] == corr && s.Device.Valid(i) {
			return i
		}
	}
	t.Fatalf("rank %d: no slice at %d with correlation %d", tr.Rank, ts, corr)
	return -1
}

// detail reads a row's detail columns, which the table keeps sparse.
func detail(tr *kineto.Trace) (num func(col string, row int) (int64, bool), str func(col string, row int) string) {
	s := tr.Slices
	n := s.Len()
	i32 := map[string]*stream.Sparse[int32]{"grid_x": &s.GridX, "grid_y": &s.GridY, "grid_z": &s.GridZ,
		"block_x": &s.BlockX, "block_y": &s.BlockY, "block_z": &s.BlockZ, "registers": &s.Registers}
	i64 := map[string]*stream.Sparse[int64]{"shared_mem": &s.SharedMem, "bytes": &s.Bytes}
	dicts := map[string]*stream.SparseDict{"copy_kind": &s.CopyKind, "host_mem": &s.HostMem, "coll_name": &s.CollName,
		"coll_algo": &s.CollAlgo, "coll_proto": &s.CollProto}
	num = func(col string, row int) (int64, bool) {
		if c, ok := i32[col]; ok {
			d := c.Dense(n)
			return int64(d.V[row]), d.Valid(row)
		}
		if c, ok := i64[col]; ok {
			d := c.Dense(n)
			return d.V[row], d.Valid(row)
		}
		switch col {
		case "launch_ts":
			return s.LaunchTS.V[row], s.LaunchTS.Valid(row)
		case "step":
			return int64(s.Step.V[row]), s.Step.Valid(row)
		case "self_dur":
			return s.SelfDur.V[row], s.SelfDur.Valid(row)
		}
		panic(col)
	}
	str = func(col string, row int) string {
		d := dicts[col].Dense(n)
		if !d.Valid(row) {
			return ""
		}
		return tr.Str.Get(d.V[row])
	}
	return num, str
}

func TestCorpusKernelAndMemcpy(t *testing.T) {
	path := corpusFile(t, "h100_2gpu_1s.sqlite")
	trs, err := nsys.ReadFile(path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	base := trs[0].BaseTimeNS
	tr := trs[1] // pid 112, device 1

	var k struct {
		start, end, stream, corr, gx, gy, gz, bx, by, bz, regs, smem int64
		name                                                         string
	}
	err = db.QueryRow(`SELECT k.start, k."end", k.streamId, k.correlationId, gridX, gridY, gridZ, blockX, blockY, blockZ,
			registersPerThread, staticSharedMemory + dynamicSharedMemory, s.value
		FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName
		WHERE deviceId = 1 AND dynamicSharedMemory > 0 AND EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r
			WHERE r.correlationId = k.correlationId AND r.globalTid / 16777216 = k.globalPid / 16777216)
		ORDER BY k.start LIMIT 1`).Scan(
		&k.start, &k.end, &k.stream, &k.corr, &k.gx, &k.gy, &k.gz, &k.bx, &k.by, &k.bz, &k.regs, &k.smem, &k.name)
	if err != nil {
		t.Fatal(err)
	}
	i := findRow(t, tr, base+k.start, k.corr)
	s := tr.Slices
	if got := tr.Str.Get(s.Kind.V[i]); got != "kernel" {
		t.Errorf("kind %s", got)
	}
	if got := tr.Str.Get(s.Name.V[i]); got != k.name {
		t.Errorf("name %q, want %q", got, k.name)
	}
	if s.Dur.V[i] != k.end-k.start || s.Stream.V[i] != k.stream || s.Device.V[i] != 1 || s.PID.V[i] != 1 || s.TID.V[i] != k.stream {
		t.Errorf("dur %d stream %d device %d pid %d tid %d", s.Dur.V[i], s.Stream.V[i], s.Device.V[i], s.PID.V[i], s.TID.V[i])
	}
	num, str := detail(tr)
	for col, want := range map[string]int64{"grid_x": k.gx, "grid_y": k.gy, "grid_z": k.gz, "block_x": k.bx, "block_y": k.by,
		"block_z": k.bz, "registers": k.regs, "shared_mem": k.smem} {
		if v, ok := num(col, i); !ok || v != want {
			t.Errorf("%s = %d (valid %v), want %d", col, v, ok, want)
		}
	}
	launch := query1[int64](t, db, `SELECT start FROM CUPTI_ACTIVITY_KIND_RUNTIME
		WHERE correlationId = ? AND globalTid / 16777216 = 281476855758848 / 16777216`, k.corr)
	if v, ok := num("launch_ts", i); !ok || v != base+launch {
		t.Errorf("launch_ts %d (valid %v), want %d", v, ok, base+launch)
	}

	// every memcpy kind of the file: bytes, kind and host memory
	rows, err := db.Query(`SELECT start, correlationId, bytes, copyKind, srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY
		WHERE deviceId = 1 GROUP BY copyKind, srcKind, dstKind`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := map[[3]int64][2]string{{1, 1, 2}: {"HtoD", "pinned"}, {1, 0, 2}: {"HtoD", "pageable"},
		{2, 2, 1}: {"DtoH", "pinned"}, {8, 2, 2}: {"DtoD", ""}}
	seen := 0
	for rows.Next() {
		var start, corr, bytes int64
		var kind [3]int64
		if err := rows.Scan(&start, &corr, &bytes, &kind[0], &kind[1], &kind[2]); err != nil {
			t.Fatal(err)
		}
		w, ok := want[kind]
		if !ok {
			t.Fatalf("unexpected memcpy kind %v in the corpus", kind)
		}
		seen++
		i := findRow(t, tr, base+start, corr)
		if v, ok := num("bytes", i); !ok || v != bytes {
			t.Errorf("%v: bytes %d, want %d", kind, v, bytes)
		}
		if ck, hm := str("copy_kind", i), str("host_mem", i); ck != w[0] || hm != w[1] {
			t.Errorf("%v (%s): copy kind %q host mem %q, want %q %q", kind, tr.Str.Get(tr.Slices.Name.V[i]), ck, hm, w[0], w[1])
		}
	}
	if seen != len(want) {
		t.Errorf("checked %d memcpy kinds, want %d", seen, len(want))
	}
}

// TestCorpusStoreAndDetectors loads the h100 export's traces into an
// in-memory store through ingest.TraceBatches and runs every detector.
func TestCorpusStoreAndDetectors(t *testing.T) {
	path := corpusFile(t, "h100_2gpu_1s.sqlite")
	trs, err := nsys.ReadFile(path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tr := range trs {
		bs := ingest.TraceBatches(tr, "run", "host")
		for _, b := range bs {
			if b.Rec.NumRows() == 0 {
				continue
			}
			if err := st.Insert(ctx, b.Table, b.Rec); err != nil {
				t.Fatalf("%s: %v", b.Table, err)
			}
		}
		ingest.Release(bs)
	}
	if err := ingest.RefreshRuns(ctx, st, "run"); err != nil {
		t.Fatal(err)
	}
	for _, tr := range trs {
		for kind, want := range kindRows(tr) {
			q := fmt.Sprintf("SELECT count(*) FROM slices WHERE rank = %d AND kind = '%s'", tr.Rank, kind)
			rows, err := st.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			var got int
			rows.Next()
			rows.Scan(&got)
			rows.Close()
			if got != want {
				t.Errorf("rank %d: %d %s rows in the store, %d in the trace", tr.Rank, got, kind, want)
			}
		}
	}
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := detectors.SetWindow(ctx, st, detectors.Window{}); err != nil {
		t.Fatal(err)
	}
	res, err := set.Run(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := st.Query(ctx, `SELECT rank, count(*) FROM metrics WHERE detector = 'temporal_breakdown' GROUP BY rank ORDER BY rank`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ranks []int
	for rows.Next() {
		var rank, n int
		if err := rows.Scan(&rank, &n); err != nil {
			t.Fatal(err)
		}
		ranks = append(ranks, rank)
	}
	if fmt.Sprint(ranks) != "[0 1]" {
		t.Errorf("temporal_breakdown metrics for ranks %v, want [0 1]", ranks)
	}
	findings := 0
	for _, r := range res {
		findings += len(r.Rows)
	}
	t.Logf("%d detectors ran, %d result rows", len(res), findings)
}
