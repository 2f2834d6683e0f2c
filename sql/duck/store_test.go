package duck_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/sql/schema"
	"github.com/trainscope/trainscope/stream"
)

// ---- shared helpers (used by macros_test.go and views_test.go too) ----------

func openMem(t *testing.T) *duck.Store {
	t.Helper()
	st, err := duck.Open(context.Background(), "", duck.Options{Threads: 2})
	if err != nil {
		t.Fatalf("open in-memory store: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return st
}

func mustExec(t *testing.T, st *duck.Store, q string, args ...any) {
	t.Helper()
	if err := st.Exec(context.Background(), q, args...); err != nil {
		t.Fatalf("exec %q: %v", q, err)
	}
}

// rowStrings runs a query and renders every row as its columns joined by
// "|", NULL as "NULL". Queries cast to keep the rendering exact.
func rowStrings(t *testing.T, st *duck.Store, q string, args ...any) []string {
	t.Helper()
	rows, err := st.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("scan %q: %v", q, err)
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			if v.Valid {
				parts[i] = v.String
			} else {
				parts[i] = "NULL"
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("rows %q: %v", q, err)
	}
	return out
}

func checkRows(t *testing.T, st *duck.Store, want []string, q string, args ...any) {
	t.Helper()
	got := rowStrings(t, st, q, args...)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("query %s\n got: %q\nwant: %q", q, got, want)
	}
}

func queryInt(t *testing.T, st *duck.Store, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := st.Conn().QueryRowContext(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	return n
}

// ---- a hand-built slices record ---------------------------------------------

// buildSlices is one rank's slices: a compute kernel, a comm kernel, a
// memcpy, and two runtime calls (one launching the kernel, one outside any
// step).
func buildSlices() *stream.SliceTable {
	tb := stream.NewSliceTable(stream.NewStrings(), true)
	s := tb.Str
	add := func(step int32, stepOK bool, kind, cat, name string, ts, dur, tid int64) int {
		tb.Step.AppendOpt(step, stepOK)
		tb.Kind.Append(s.ID(kind))
		tb.Cat.Append(s.ID(cat))
		tb.Name.Append(s.ID(name))
		tb.TS.Append(ts)
		tb.Dur.Append(dur)
		tb.PID.Append(4242)
		tb.TID.Append(tid)
		return tb.Len() - 1
	}
	// 0: compute kernel
	r := add(1, true, stream.KindKernel, "kernel", "sm90_gemm", 1_000_000, 50_000, 7)
	tb.Device.Append(0)
	tb.Stream.Append(7)
	tb.Correlation.Append(101)
	tb.ExternalID.Append(501)
	tb.LaunchTS.Append(990_000)
	tb.GridX.Set(r, 132)
	tb.GridY.Set(r, 1)
	tb.GridZ.Set(r, 1)
	tb.BlockX.Set(r, 384)
	tb.BlockY.Set(r, 1)
	tb.BlockZ.Set(r, 1)
	tb.Registers.Set(r, 168)
	tb.SharedMem.Set(r, 232_448)
	tb.Occupancy.Set(r, 0.25)
	// 1: comm kernel
	r = add(1, true, stream.KindComm, "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1_060_000, 200_000, 13)
	tb.Device.Append(0)
	tb.Stream.Append(13)
	tb.Correlation.Append(102)
	tb.ExternalID.Append(502)
	tb.LaunchTS.Append(1_000_500)
	tb.GridX.Set(r, 2)
	tb.BlockX.Set(r, 640)
	tb.CollName.Set(r, s.ID("allreduce"))
	tb.CollInElems.Set(r, 1_048_576)
	tb.CollOutElems.Set(r, 1_048_576)
	tb.CollDtype.Set(r, s.ID("Float"))
	tb.CollGroupSize.Set(r, 2)
	tb.PGName.Set(r, s.ID("0"))
	tb.PGDesc.Set(r, s.ID("default_pg"))
	tb.PGRanks.Set(r, s.ID("[0, 1]"))
	tb.CollAlgo.Set(r, s.ID("Ring"))
	tb.CollProto.Set(r, s.ID("LL"))
	// 2: memcpy
	r = add(1, true, stream.KindMemcpy, "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 1_300_000, 4_000, 7)
	tb.Device.Append(0)
	tb.Stream.Append(7)
	tb.Correlation.Append(103)
	tb.ExternalID.AppendNull()
	tb.LaunchTS.Append(1_290_000)
	tb.Bytes.Set(r, 65_536)
	tb.CopyKind.Set(r, s.ID("HtoD"))
	tb.HostMem.Set(r, s.ID("Pinned"))
	// 3: runtime call that launched the kernel
	add(1, true, stream.KindRuntime, "cuda_runtime", "cudaLaunchKernel", 990_000, 5_000, 1)
	tb.Device.AppendNull()
	tb.Stream.AppendNull()
	tb.Correlation.Append(101)
	tb.ExternalID.Append(501)
	tb.LaunchTS.AppendNull()
	// 4: runtime call outside any step
	add(0, false, stream.KindRuntime, "cuda_runtime", "cudaDeviceSynchronize", 2_000_000, 1_000, 1)
	tb.Device.AppendNull()
	tb.Stream.AppendNull()
	tb.Correlation.AppendNull()
	tb.ExternalID.AppendNull()
	tb.LaunchTS.AppendNull()
	// 5: a matmul operator with the FLOPs its shapes give
	r = add(1, true, stream.KindCPUOp, "cpu_op", "aten::mm", 985_000, 20_000, 1)
	tb.Device.AppendNull()
	tb.Stream.AppendNull()
	tb.Correlation.AppendNull()
	tb.ExternalID.Append(501)
	tb.LaunchTS.AppendNull()
	tb.Flops.Set(r, 2*4096*1024*512)
	tb.FlopsDtype.Set(r, s.ID("bf16"))
	return tb
}

// wantSlices is buildSlices for run "run-1", host "node-a", rank 3, in the
// table's column order, ordered by ts (self_dur, filled by readers, is NULL).
var wantSlices = []string{
	"run-1|3|node-a|1|cpu_op|cpu_op|aten::mm|985000|20000|4242|1|NULL|NULL|NULL|501|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|4294967296|bf16|NULL|NULL|NULL|NULL|NULL|NULL",
	"run-1|3|node-a|1|runtime|cuda_runtime|cudaLaunchKernel|990000|5000|4242|1|NULL|NULL|101|501|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
	"run-1|3|node-a|1|kernel|kernel|sm90_gemm|1000000|50000|4242|7|0|7|101|501|990000|NULL|NULL|NULL|132|1|1|384|1|1|168|232448|0.25|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
	"run-1|3|node-a|1|comm|kernel|ncclDevKernel_AllReduce_Sum_f32_RING_LL|1060000|200000|4242|13|0|13|102|502|1000500|NULL|NULL|NULL|2|NULL|NULL|640|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|allreduce|1048576|1048576|Float|2|0|default_pg|[0, 1]|Ring|LL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
	"run-1|3|node-a|1|memcpy|gpu_memcpy|Memcpy HtoD (Pinned -> Device)|1300000|4000|4242|7|0|7|103|NULL|1290000|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|65536|HtoD|Pinned|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
	"run-1|3|node-a|NULL|runtime|cuda_runtime|cudaDeviceSynchronize|2000000|1000|4242|1|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
}

const slicesByTS = "SELECT * FROM slices ORDER BY rank, ts"

func insertSlices(t *testing.T, st *duck.Store, runID, host string, rank int32) {
	t.Helper()
	rec := buildSlices().Record(runID, host, rank)
	defer rec.Release()
	if err := st.Insert(context.Background(), "slices_detail", rec); err != nil {
		t.Fatalf("insert slices: %v", err)
	}
}

// ---- Open ------------------------------------------------------------------

func TestOpenInMemory(t *testing.T) {
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{Threads: 3, MemoryLimit: "512MB"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Path != "" {
		t.Errorf("Path = %q", st.Path)
	}
	checkRows(t, st, []string{"3"}, "SELECT current_setting('threads')::VARCHAR")
	if got := rowStrings(t, st, "SELECT current_setting('memory_limit')"); len(got) != 1 || !strings.Contains(got[0], "488.2 MiB") {
		t.Errorf("memory_limit = %q, want 512MB (488.2 MiB)", got)
	}
	// The whole schema is applied: every table the schema files create
	// exists, and no other.
	var tables []string
	for _, f := range schema.Files() {
		for _, m := range regexp.MustCompile(`(?m)^CREATE TABLE IF NOT EXISTS (\w+)`).FindAllStringSubmatch(f.SQL, -1) {
			tables = append(tables, m[1])
		}
	}
	sort.Strings(tables)
	if len(tables) < 15 {
		t.Fatalf("only %d tables found in the schema files", len(tables))
	}
	checkRows(t, st, tables, "SELECT table_name FROM duckdb_tables() WHERE NOT temporary ORDER BY 1")
	var views []string
	for _, f := range schema.Files() {
		for _, m := range regexp.MustCompile(`(?m)^CREATE OR REPLACE VIEW (\w+)`).FindAllStringSubmatch(f.SQL, -1) {
			views = append(views, m[1])
		}
	}
	sort.Strings(views)
	for _, v := range []string{"gpu_window", "collective_instances", "slices"} {
		if !slices.Contains(views, v) {
			t.Fatalf("view %s not found in the schema files", v)
		}
	}
	checkRows(t, st, views, "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1")
	checkRows(t, st, []string{
		"covered_time|table_macro", "exposed_time|table_macro", "fmt_ns|macro", "interval_union|table_macro",
		"metric_value|macro", "pct|macro", "robust_z|macro",
	}, `SELECT DISTINCT function_name, function_type FROM duckdb_functions()
WHERE function_name IN ('covered_time', 'exposed_time', 'fmt_ns', 'interval_union', 'metric_value', 'pct', 'robust_z')
  AND schema_name = 'main' ORDER BY 1`)
	// Every event table is exported.
	exp := append([]string(nil), duck.ExportTables...)
	sort.Strings(exp)
	if want := []string{"counters", "findings", "mem_blocks", "mem_events", "mem_segments", "mem_settings", "metrics", "node_history", "process_groups", "ranks", "runs", "script_context", "script_flags", "slices", "stacks", "step_account", "steps", "threads"}; !reflect.DeepEqual(exp, want) {
		t.Errorf("ExportTables = %q", exp)
	}
	// Two in-memory stores are independent.
	other := openMem(t)
	mustExec(t, other, "INSERT INTO runs (run_id) VALUES ('x')")
	if n := queryInt(t, st, "SELECT count(*) FROM runs"); n != 0 {
		t.Errorf("in-memory stores share data: %d runs", n)
	}
}

func TestOpenFileReopenAndReadOnly(t *testing.T) {
	ctx := context.Background()
	// The parent directory does not exist yet: Open creates it.
	path := filepath.Join(t.TempDir(), "nested", "dir", "run.duckdb")
	st, err := duck.Open(ctx, path, duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Path != path {
		t.Errorf("Path = %q, want %q", st.Path, path)
	}
	insertSlices(t, st, "run-1", "node-a", 3)
	mustExec(t, st, "INSERT INTO runs (run_id, world_size) VALUES ('run-1', 2)")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopening read-write re-applies the (idempotent) schema and keeps data.
	st, err = duck.Open(ctx, path, duck.Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if n := queryInt(t, st, "SELECT count(*) FROM slices"); n != 6 {
		t.Errorf("slices after reopen = %d, want 6", n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// Read-only: reads work, including views and macros; writes fail.
	ro, err := duck.Open(ctx, path, duck.Options{ReadOnly: true, Threads: 1})
	if err != nil {
		t.Fatalf("open read-only: %v", err)
	}
	defer ro.Close()
	checkRows(t, ro, wantSlices, slicesByTS)
	checkRows(t, ro, []string{"run-1|2"}, "SELECT run_id, world_size FROM runs")
	checkRows(t, ro, []string{"1.0 us"}, "SELECT fmt_ns(1000)")
	if err := ro.Exec(ctx, "INSERT INTO runs (run_id) VALUES ('y')"); err == nil {
		t.Errorf("insert into a read-only database succeeded")
	}
	rec := buildSlices().Record("run-2", "node-b", 0)
	defer rec.Release()
	if err := ro.Insert(ctx, "slices_detail", rec); err == nil {
		t.Errorf("Insert into a read-only database succeeded")
	}
}

func TestOpenReadOnlyMissing(t *testing.T) {
	ctx := context.Background()
	missing := filepath.Join(t.TempDir(), "nope.duckdb")
	st, err := duck.Open(ctx, missing, duck.Options{ReadOnly: true})
	if err == nil {
		st.Close()
		t.Fatal("read-only open of a missing file succeeded")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not wrap fs.ErrNotExist", err)
	}
	if _, err := duck.Open(ctx, "", duck.Options{ReadOnly: true}); err == nil {
		t.Errorf("read-only in-memory open succeeded")
	}
}

// ---- Insert ------------------------------------------------------------------

func TestInsertSlicesRoundTrip(t *testing.T) {
	st := openMem(t)
	insertSlices(t, st, "run-1", "node-a", 3)
	checkRows(t, st, wantSlices, slicesByTS)
	// The column types are the table's, not the Arrow dictionary's.
	checkRows(t, st, []string{"VARCHAR|INTEGER|BIGINT|DOUBLE"},
		"SELECT typeof(name), typeof(rank), typeof(ts), typeof(occupancy) FROM slices LIMIT 1")

	// A second insert (a second temporary view) appends.
	insertSlices(t, st, "run-1", "node-b", 4)
	checkRows(t, st, []string{"3|node-a|6", "4|node-b|6"},
		"SELECT rank, host, count(*) FROM slices GROUP BY ALL ORDER BY rank")
	// The temporary views are gone.
	if n := queryInt(t, st, "SELECT count(*) FROM duckdb_views() WHERE view_name LIKE 'incoming_%'"); n != 0 {
		t.Errorf("%d incoming views left behind", n)
	}
}

func TestInsertStepsAndCounters(t *testing.T) {
	st := openMem(t)
	ctx := context.Background()
	var steps stream.StepTable
	for i, w := range [][2]int64{{100, 200}, {200, 330}} {
		steps.Step.Append(int32(i))
		steps.Start.Append(w[0])
		steps.End.Append(w[1])
	}
	rec := steps.Record("run-1", 1)
	if err := st.Insert(ctx, "steps", rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	checkRows(t, st, []string{"run-1|1|0|100|200", "run-1|1|1|200|330"}, "SELECT * FROM steps ORDER BY step")

	ct := &stream.CounterTable{Str: stream.NewStrings()}
	ct.Device.AppendNull()
	ct.TS.Append(5)
	ct.Metric.Append(ct.Str.ID("cpu_util"))
	ct.Value.Append(12.5)
	rec = ct.Record("run-1", "node-a", 0, false)
	if err := st.Insert(ctx, "counters", rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	checkRows(t, st, []string{"run-1|NULL|node-a|NULL|5|cpu_util|12.5|NULL"}, "SELECT * FROM counters")
}

func TestInsertEmptyIsNoop(t *testing.T) {
	st := openMem(t)
	ctx := context.Background()
	rec := stream.NewSliceTable(stream.NewStrings(), true).Record("run-1", "node-a", 0)
	defer rec.Release()
	if err := st.Insert(ctx, "slices_detail", rec); err != nil {
		t.Fatalf("insert of an empty record: %v", err)
	}
	if n := queryInt(t, st, "SELECT count(*) FROM slices"); n != 0 {
		t.Errorf("slices = %d rows after an empty insert", n)
	}
	// A no-op does not even look at the table.
	if err := st.Insert(ctx, "no_such_table", rec); err != nil {
		t.Errorf("empty insert into a missing table: %v", err)
	}
	// With rows, a missing table is an error that names it.
	full := buildSlices().Record("run-1", "node-a", 0)
	defer full.Release()
	err := st.Insert(ctx, "no_such_table", full)
	if err == nil || !strings.Contains(err.Error(), "no_such_table") {
		t.Errorf("insert into a missing table: err = %v", err)
	}
	// The failed insert leaves the store usable.
	insertSlices(t, st, "run-1", "node-a", 3)
	if n := queryInt(t, st, "SELECT count(*) FROM slices"); n != 6 {
		t.Errorf("slices = %d, want 6", n)
	}
}

// A failed Insert should not leave its incoming_N view behind: the view
// reads an Arrow stream that Insert has already released, and in a file
// database it is persisted. Store.Insert drops the view only on success.
func TestInsertFailureDropsView(t *testing.T) {
	st := openMem(t)
	rec := buildSlices().Record("run-1", "node-a", 0)
	defer rec.Release()
	if err := st.Insert(context.Background(), "steps", rec); err == nil {
		t.Fatal("inserting slices columns into steps succeeded")
	}
	if n := queryInt(t, st, "SELECT count(*) FROM duckdb_views() WHERE view_name LIKE 'incoming_%'"); n != 0 {
		t.Errorf("%d incoming views left behind after a failed insert", n)
	}
}

func TestQueryArrow(t *testing.T) {
	st := openMem(t)
	insertSlices(t, st, "run-1", "node-a", 3)
	rdr, err := st.QueryArrow(context.Background(), "SELECT name, dur FROM slices WHERE kind = ? ORDER BY ts", "runtime")
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var got []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		names := rec.Column(0).(*array.String)
		durs := rec.Column(1).(*array.Int64)
		for i := range int(rec.NumRows()) {
			got = append(got, fmt.Sprintf("%s|%d", names.Value(i), durs.Value(i)))
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"cudaLaunchKernel|5000", "cudaDeviceSynchronize|1000"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// ---- ExportParquet -------------------------------------------------------------

func TestExportParquet(t *testing.T) {
	st := openMem(t)
	ctx := context.Background()
	insertSlices(t, st, "run-1", "node-a", 0)
	insertSlices(t, st, "run-1", "node-b", 1)
	insertSlices(t, st, "run-2", "node-c", 0)
	mustExec(t, st, "INSERT INTO runs (run_id, world_size) VALUES ('run-1', 2), ('run-2', 1)")
	dir := filepath.Join(t.TempDir(), "pq")
	if err := st.ExportParquet(ctx, dir); err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"run-1", "run-2"} {
		files, _ := filepath.Glob(filepath.Join(dir, "slices", "run_id="+run, "*.parquet"))
		if len(files) == 0 {
			t.Errorf("no parquet files for slices of %s", run)
		}
		files, _ = filepath.Glob(filepath.Join(dir, "runs", "run_id="+run, "*.parquet"))
		if len(files) == 0 {
			t.Errorf("no parquet files for runs of %s", run)
		}
	}
	// Empty tables are skipped.
	for _, empty := range []string{"steps", "counters", "findings", "metrics", "ranks", "process_groups"} {
		if m, _ := filepath.Glob(filepath.Join(dir, empty)); len(m) != 0 {
			t.Errorf("empty table %s was exported", empty)
		}
	}
	glob := strings.ReplaceAll(filepath.Join(dir, "slices", "*", "*.parquet"), "'", "''")
	checkRows(t, st, []string{"run-1|12", "run-2|6"},
		"SELECT run_id, count(*) FROM read_parquet('"+glob+"', hive_partitioning = true) GROUP BY ALL ORDER BY 1")
	// The data survives the round trip, column for column.
	cols := "run_id, rank, host, step, kind, cat, name, ts, dur, pid, tid, device, stream, correlation, external_id, launch_ts, " +
		"grid_x, grid_y, grid_z, block_x, block_y, block_z, registers, shared_mem, occupancy, bytes, copy_kind, host_mem, " +
		"coll_name, coll_in_elems, coll_out_elems, coll_dtype, coll_group_size, pg_name, pg_desc, pg_ranks, coll_algo, coll_proto"
	if n := queryInt(t, st, "SELECT count(*) FROM (SELECT "+cols+" FROM read_parquet('"+glob+"', hive_partitioning = true) EXCEPT ALL SELECT "+cols+" FROM slices)"); n != 0 {
		t.Errorf("%d exported rows differ from the table", n)
	}
	// Exporting again into the same directory replaces the files rather
	// than adding to them.
	insertSlices(t, st, "run-2", "node-d", 1)
	if err := st.ExportParquet(ctx, dir); err != nil {
		t.Fatalf("second export: %v", err)
	}
	checkRows(t, st, []string{"run-1|12", "run-2|12"},
		"SELECT run_id, count(*) FROM read_parquet('"+glob+"', hive_partitioning = true) GROUP BY ALL ORDER BY 1")
}

// An in-memory store past its memory limit keeps table blocks in a folder
// of its own under TMPDIR (not ".tmp" in the working folder), and removes
// it at Close.
func TestInMemorySpillsToItsOwnTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{Threads: 1, MemoryLimit: "64MB"})
	if err != nil {
		t.Fatal(err)
	}
	// ~300 MB of strings against a 64 MB limit
	if err := st.Exec(ctx, "CREATE TABLE big AS SELECT range AS id, repeat('x', 120) || range::VARCHAR AS s FROM range(2000000)"); err != nil {
		st.Close()
		t.Fatalf("a table over the memory limit: %v", err)
	}
	var n int64
	if err := st.Conn().QueryRowContext(ctx, "SELECT count(DISTINCT s) FROM big").Scan(&n); err != nil || n != 2_000_000 {
		t.Fatalf("count = %d, %v", n, err)
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, "trainscope-duckdb-*"))
	if len(dirs) != 1 {
		t.Fatalf("temp folders %q, want one under TMPDIR", dirs)
	}
	spilled, _ := filepath.Glob(filepath.Join(dirs[0], "*"))
	if len(spilled) == 0 {
		t.Errorf("nothing spilled into %s", dirs[0])
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("left after Close: %q", left)
	}
}

// WithMemoryLimit holds its limit while f runs and puts back the store's
// own, or DuckDB's default when the store was opened without one.
func TestWithMemoryLimit(t *testing.T) {
	ctx := context.Background()
	limit := func(st *duck.Store) string {
		got := rowStrings(t, st, "SELECT current_setting('memory_limit')")
		if len(got) != 1 {
			t.Fatalf("memory_limit rows %q", got)
		}
		return got[0]
	}
	for _, opened := range []string{"512MB", ""} {
		st, err := duck.Open(ctx, "", duck.Options{MemoryLimit: opened})
		if err != nil {
			t.Fatal(err)
		}
		before := limit(st)
		var during string
		err = st.WithMemoryLimit(ctx, "256MB", func() error { during = limit(st); return nil })
		if err != nil {
			t.Errorf("opened with %q: %v", opened, err)
		}
		if !strings.Contains(during, "244.1 MiB") {
			t.Errorf("opened with %q: limit inside %q, want 256MB (244.1 MiB)", opened, during)
		}
		if after := limit(st); after != before {
			t.Errorf("opened with %q: limit after %q, want %q as before", opened, after, before)
		}
		// f's error comes back, and the limit is put back all the same
		boom := errors.New("boom")
		if err := st.WithMemoryLimit(ctx, "128MB", func() error { return boom }); !errors.Is(err, boom) {
			t.Errorf("opened with %q: error %v, want boom", opened, err)
		}
		if after := limit(st); after != before {
			t.Errorf("opened with %q: limit after a failure %q, want %q", opened, after, before)
		}
		st.Close()
	}
}
