package archive_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/archive"
	"github.com/trainscope/trainscope/sql/archive/s3fake"
	"github.com/trainscope/trainscope/sql/duck"
)

const sample = "../../bench/sample"

// analysed loads the bundled sample as run and analyses it as the serve
// scheduler does: findings, root causes and node history.
func analysed(t *testing.T, run string) *duck.Store {
	t.Helper()
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	files, err := ingest.Discover([]string{sample})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: run, Rank: -1}); err != nil {
		t.Fatal(err)
	}
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := detectors.SetWindow(ctx, st, detectors.Window{}); err != nil {
		t.Fatal(err)
	}
	res, err := set.RunWithAudit(ctx, st, "")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := detectors.BuildReport(ctx, st, res)
	if err != nil {
		t.Fatal(err)
	}
	if err := detectors.SaveCauses(ctx, st, rep); err != nil {
		t.Fatal(err)
	}
	if err := detectors.SaveNodeHistory(ctx, st, rep, time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	return st
}

// queryNode is an empty store with a's archive attached, as the query
// node has it, and the tables attached.
func queryNode(t *testing.T, a *archive.Attacher) (*duck.Store, []string) {
	t.Helper()
	q, err := duck.Open(context.Background(), "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	got, err := a.Attach(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return q, got
}

// digest is a fingerprint of table t's rows of run (all runs when run is
// ""), in an order that does not depend on how they were stored.
func digest(t *testing.T, st *duck.Store, table, run string) (n int64, sum string) {
	t.Helper()
	q := "SELECT count(*), coalesce(md5(string_agg(x::VARCHAR, chr(10) ORDER BY x::VARCHAR)), '') FROM " + table + " x"
	var args []any
	if run != "" {
		q += " WHERE run_id = ?"
		args = append(args, run)
	}
	if err := st.Conn().QueryRowContext(context.Background(), q, args...).Scan(&n, &sum); err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	return n, sum
}

// A run written to the archive and attached to an empty store reads back
// row for row in every table, through the schema's views too.
func TestArchiveRoundTrip(t *testing.T) {
	ctx := context.Background()
	const run = "job/7 'a'" // a run id that is no file name
	st := analysed(t, run)
	dir := t.TempDir()
	w, err := archive.WriteRun(ctx, st, dir, run, time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if w.Files < 8 || w.Bytes == 0 {
		t.Fatalf("wrote %+v", w)
	}
	var startNS int64
	if err := st.Conn().QueryRowContext(ctx, "SELECT min(start_ns) FROM runs").Scan(&startNS); err != nil {
		t.Fatal(err)
	}
	wantDay := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	if s := time.Unix(0, startNS).UTC(); s.Year() >= 2000 {
		wantDay = s.Format(time.DateOnly)
	}
	if w.Day != wantDay {
		t.Errorf("day %s, want %s (run start %d)", w.Day, wantDay, startNS)
	}
	if _, err := os.Stat(filepath.Join(dir, "slices_detail", "day="+wantDay, "run=job%2F7%20%27a%27", "data_0.parquet")); err != nil {
		t.Errorf("hive layout: %v", err)
	}

	a := &archive.Attacher{Dir: dir}
	q, got := queryNode(t, a)
	if len(got) != w.Files {
		t.Errorf("attached %v, wrote %d files", got, w.Files)
	}
	// the schema's views read the archive too, those over slices_detail included
	for _, table := range append(append([]string(nil), archive.Tables...), "slices", "node_reputation", "node_outcomes", "rank_steps", "op_roofline") {
		n0, d0 := digest(t, st, table, "")
		n1, d1 := digest(t, q, table, "")
		if n0 != n1 || d0 != d1 {
			t.Errorf("%s: %d rows (%s) in the store, %d (%s) through the archive", table, n0, d0, n1, d1)
		}
	}
	for _, table := range []string{"findings", "rank_steps"} {
		if n, _ := digest(t, q, table, ""); n == 0 {
			t.Errorf("the sample has no %s: the comparison proves little", table)
		}
	}
	// nothing new: a second Attach attaches nothing
	if again, err := a.Attach(ctx, q); err != nil || len(again) != 0 {
		t.Errorf("second attach: %v %v", again, err)
	}

	// a later analysis replaces the run's files, on another day too
	if err := st.Exec(ctx, "DELETE FROM findings WHERE rowid % 2 = 0"); err != nil {
		t.Fatal(err)
	}
	if err := st.Exec(ctx, "UPDATE runs SET start_ns = ?", time.Date(2025, 2, 3, 4, 5, 6, 0, time.UTC).UnixNano()); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.WriteRun(ctx, st, dir, run, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"findings", "runs", "slices"} {
		n0, d0 := digest(t, st, table, "")
		n1, d1 := digest(t, q, table, "")
		if n0 != n1 || d0 != d1 {
			t.Errorf("after rewriting, %s: %d rows in the store, %d through the archive", table, n0, n1)
		}
	}
	if old, _ := filepath.Glob(filepath.Join(dir, "*", "day="+wantDay)); len(old) != 0 && wantDay != "2025-02-03" {
		for _, o := range old {
			if e, _ := os.ReadDir(o); len(e) != 0 {
				t.Errorf("the run's old day is still there: %s", o)
			}
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, "*", "*", "*", "*.tmp")); len(tmp) != 0 {
		t.Errorf("left behind %v", tmp)
	}
}

// Every archived file is read by a Parquet reader other than DuckDB's
// (arrow-go), and uses only types Trino, Spark and Hive read: signed
// integers, doubles, booleans, UTF-8 strings and lists of them.
func TestArchiveTypesAreCommon(t *testing.T) {
	ctx := context.Background()
	st := analysed(t, "types")
	dir := t.TempDir()
	if _, err := archive.WriteRun(ctx, st, dir, "types", time.Now()); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "day=*", "run=*", "*.parquet"))
	if len(files) < 8 {
		t.Fatalf("only %d files", len(files))
	}
	for _, f := range files {
		table := strings.Split(strings.TrimPrefix(f, dir+string(filepath.Separator)), string(filepath.Separator))[0]
		rdr, err := file.OpenParquetFile(f, false)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		sc := rdr.MetaData().Schema
		for i := range sc.NumColumns() {
			c := sc.Column(i)
			if why := uncommon(c); why != "" {
				t.Errorf("%s column %s: %s", table, c.Path(), why)
			}
		}
		fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		tbl, err := fr.ReadTable(ctx)
		if err != nil {
			t.Fatalf("%s: arrow-go cannot read it: %v", f, err)
		}
		n, _ := digest(t, st, table, "")
		if tbl.NumRows() != n {
			t.Errorf("%s: arrow-go read %d rows, the table has %d", table, tbl.NumRows(), n)
		}
		tbl.Release()
		rdr.Close()
	}
}

// uncommon says why a Parquet column is one Trino, Spark or Hive may not
// read, or "".
func uncommon(c *schema.Column) string {
	lt := c.LogicalType()
	switch c.PhysicalType() {
	case parquet.Types.Int32, parquet.Types.Int64:
		if it, ok := lt.(schema.IntLogicalType); ok && !it.IsSigned() {
			return "unsigned integer (Spark has no unsigned 64-bit type)"
		}
		if _, ok := lt.(schema.IntLogicalType); ok || lt.IsNone() {
			return ""
		}
		return "logical type " + lt.String()
	case parquet.Types.Double, parquet.Types.Boolean, parquet.Types.Float:
		return ""
	case parquet.Types.ByteArray:
		if _, ok := lt.(schema.StringLogicalType); ok {
			return ""
		}
		return "byte array of logical type " + lt.String()
	}
	return "physical type " + c.PhysicalType().String()
}

// An archive in an S3-compatible bucket: WriteRun's files are uploaded
// under the prefix, a rewrite that moves the run to another day removes
// the old objects, and a query node's mirror of the bucket attaches to
// the same rows as the store holds.
func TestArchiveInABucket(t *testing.T) {
	ctx := context.Background()
	fake, endpoint := s3fake.Start(t)
	const run = "bucket-run"
	st := analysed(t, run)
	remote, err := archive.NewRemote("s3://fleet/archive/v1", archive.S3Options{Endpoint: endpoint, Insecure: true, AccessKey: "k", SecretKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	staging := t.TempDir()
	w, err := archive.WriteRun(ctx, st, staging, run, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Upload(ctx, staging, w); err != nil {
		t.Fatal(err)
	}
	keys := fake.Keys("fleet")
	if len(keys) != w.Files {
		t.Fatalf("bucket holds %v, wrote %d files", keys, w.Files)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "archive/v1/") || !strings.Contains(k, "/day="+w.Day+"/run=bucket-run/data_0.parquet") {
			t.Errorf("key %s", k)
		}
	}
	mirror := t.TempDir()
	fetched, removed, err := remote.Mirror(ctx, mirror)
	if err != nil || fetched != w.Files || removed != 0 {
		t.Fatalf("mirror: fetched %d removed %d: %v", fetched, removed, err)
	}
	if fetched, _, _ := remote.Mirror(ctx, mirror); fetched != 0 {
		t.Errorf("a second mirror fetched %d unchanged files", fetched)
	}
	q, _ := queryNode(t, &archive.Attacher{Dir: mirror})
	for _, table := range []string{"findings", "slices", "node_history"} {
		n0, d0 := digest(t, st, table, "")
		n1, d1 := digest(t, q, table, "")
		if n0 != n1 || d0 != d1 {
			t.Errorf("%s: %d rows in the store, %d through the bucket", table, n0, n1)
		}
	}

	// the run moves to another day: its old objects go, the mirror follows
	if err := st.Exec(ctx, "UPDATE runs SET start_ns = ?", time.Date(2025, 2, 3, 4, 5, 6, 0, time.UTC).UnixNano()); err != nil {
		t.Fatal(err)
	}
	w2, err := archive.WriteRun(ctx, st, staging, run, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Upload(ctx, staging, w2); err != nil {
		t.Fatal(err)
	}
	for _, k := range fake.Keys("fleet") {
		if !strings.Contains(k, "/day=2025-02-03/") {
			t.Errorf("after the move the bucket still holds %s", k)
		}
	}
	fetched, removed, err = remote.Mirror(ctx, mirror)
	if err != nil || fetched != w2.Files || removed != w.Files {
		t.Errorf("mirror after the move: fetched %d removed %d (want %d, %d): %v", fetched, removed, w2.Files, w.Files, err)
	}
	if n, _ := digest(t, q, "runs", ""); n != 1 {
		t.Errorf("runs through the mirror: %d rows, want 1", n)
	}
}

// Runs analysed in separate databases (two ingestors) read back side by
// side: the views that group by the analysis window's per-rank number
// (gpu_class_time) give each run what its own database gave it, though
// both databases numbered their ranks from the same start.
func TestArchiveRunsFromTwoStores(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stores := map[string]*duck.Store{"run-a": analysed(t, "run-a"), "run-b": analysed(t, "run-b")}
	for run, st := range stores {
		if _, err := archive.WriteRun(ctx, st, dir, run, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	q, _ := queryNode(t, &archive.Attacher{Dir: dir})
	for run, st := range stores {
		for _, view := range []string{"gpu_class_time", "rank_steps", "collective_instances"} {
			n0, d0 := digest(t, st, view, run)
			n1, d1 := digest(t, q, view, run)
			if n0 == 0 {
				t.Errorf("%s of %s is empty: the comparison proves little", view, run)
			}
			if n0 != n1 || d0 != d1 {
				t.Errorf("%s of %s: %d rows in its store, %d through the archive (or other values)", view, run, n0, n1)
			}
		}
	}
}
