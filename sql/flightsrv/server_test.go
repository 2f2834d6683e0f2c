package flightsrv_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/sql/flightsrv"
)

// serve starts a server over an in-memory store holding two runs and
// three metrics. The store stays usable from the test goroutine, which
// plays the writer.
func serve(t *testing.T) (string, *duck.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // runs after stop: cleanups are LIFO
	for _, q := range []string{
		`INSERT INTO runs VALUES ('r1', 'pytorch', 'llama', 8, 'H100', 1700000000000000000, 1700000000500000000, ['a.json', 'b.json']),
		                         ('r2', 'pytorch', 'moe', 16, 'H200', 1700000001000000000, NULL, NULL)`,
		`INSERT INTO metrics VALUES ('r1', 'temporal_breakdown', 0, 1, 5, NULL, 'idle_pct', 12.5),
		                            ('r1', 'temporal_breakdown', 1, 1, 5, NULL, 'idle_pct', 30.0),
		                            ('r2', 'temporal_breakdown', 0, 1, 5, NULL, 'idle_pct', 7.25)`,
	} {
		if err := st.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var logged []string
	addr, stop, err := flightsrv.Serve(ctx, "127.0.0.1:0", st, flightsrv.Options{Logf: func(f string, a ...any) {
		mu.Lock()
		logged = append(logged, f)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return addr.String(), st
}

func query(t *testing.T, addr, q string) *flightsrv.Result {
	t.Helper()
	res, err := flightsrv.Query(context.Background(), addr, q)
	if err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	t.Cleanup(res.Release)
	return res
}

// column gathers one column of every batch as Go values (strings, int64s,
// float64s), NULL as nil.
func column(res *flightsrv.Result, name string) []any {
	idx := res.Schema.FieldIndices(name)
	if len(idx) == 0 {
		return nil
	}
	var out []any
	for _, b := range res.Batches {
		col := b.Column(idx[0])
		for i := 0; i < col.Len(); i++ {
			if col.IsNull(i) {
				out = append(out, nil)
				continue
			}
			switch c := col.(type) {
			case *array.String:
				out = append(out, c.Value(i))
			case *array.Int64:
				out = append(out, c.Value(i))
			case *array.Int32:
				out = append(out, int64(c.Value(i)))
			case *array.Float64:
				out = append(out, c.Value(i))
			default:
				out = append(out, col.ValueStr(i))
			}
		}
	}
	return out
}

func TestQueryThroughServer(t *testing.T) {
	addr, _ := serve(t)
	res := query(t, addr, "SELECT run_id, world_size, start_ns, end_ns FROM runs ORDER BY run_id")
	if got := res.NumRows(); got != 2 {
		t.Fatalf("%d rows, want 2", got)
	}
	want := map[string][]any{
		"run_id":     {"r1", "r2"},
		"world_size": {int64(8), int64(16)},
		"start_ns":   {int64(1700000000000000000), int64(1700000001000000000)},
		"end_ns":     {int64(1700000000500000000), nil},
	}
	for name, w := range want {
		if got := column(res, name); !equal(got, w) {
			t.Errorf("%s = %v, want %v", name, got, w)
		}
	}
	if f, _ := res.Schema.FieldsByName("world_size"); f[0].Type.ID() != arrow.INT32 {
		t.Errorf("world_size type %s, want int32 as DuckDB sends it", f[0].Type)
	}

	agg := query(t, addr, "SELECT run_id, avg(value) AS v FROM metrics GROUP BY run_id ORDER BY run_id")
	if got := column(agg, "v"); !equal(got, []any{21.25, 7.25}) {
		t.Errorf("avg = %v", got)
	}
}

// Every kind of statement the contract allows runs end to end.
func TestAllowedStatementKinds(t *testing.T) {
	addr, _ := serve(t)
	for q, min := range map[string]int64{
		"DESCRIBE runs":                             8,
		"SHOW TABLES":                               10,
		"SUMMARIZE metrics":                         8,
		"EXPLAIN SELECT * FROM runs":                1,
		"EXPLAIN ANALYZE SELECT count(*) FROM runs": 1,
		"FROM runs SELECT run_id":                   2,
		"VALUES (1), (2), (3)":                      3,
		"TABLE metrics":                             3,
		"WITH k AS (SELECT 'a' AS g, 0 AS s, 5 AS e UNION ALL SELECT 'a', 3, 9) FROM interval_union(k)": 1,
		"SELECT table_name FROM duckdb_tables() WHERE table_name = 'runs'":                              1,
	} {
		if n := query(t, addr, q).NumRows(); n < min {
			t.Errorf("%q: %d rows, want at least %d", q, n, min)
		}
	}
}

func equal(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// DuckDB's Arrow types reach the client unchanged: timestamps keep their
// unit and zone, lists stay lists.
func TestTypesPassThrough(t *testing.T) {
	addr, _ := serve(t)
	res := query(t, addr, `SELECT TIMESTAMP '2024-01-02 03:04:05.123456' AS ts,
		TIMESTAMPTZ '2024-01-02 03:04:05+00' AS tz, DATE '2024-01-02' AS d, sources
		FROM runs WHERE run_id = 'r1'`)
	fields := res.Schema.Fields()
	ts, ok := fields[0].Type.(*arrow.TimestampType)
	if !ok || ts.Unit != arrow.Microsecond || ts.TimeZone != "" {
		t.Errorf("ts: %s, want timestamp[us]", fields[0].Type)
	}
	if tz, ok := fields[1].Type.(*arrow.TimestampType); !ok || tz.TimeZone == "" {
		t.Errorf("tz: %s, want a zoned timestamp", fields[1].Type)
	}
	if fields[2].Type.ID() != arrow.DATE32 {
		t.Errorf("d: %s, want date32", fields[2].Type)
	}
	if fields[3].Type.ID() != arrow.LIST {
		t.Errorf("sources: %s, want a list", fields[3].Type)
	}
	got := res.Batches[0].Column(0).(*array.Timestamp).Value(0).ToTime(arrow.Microsecond)
	if got.Format("2006-01-02 15:04:05.000000") != "2024-01-02 03:04:05.123456" {
		t.Errorf("ts value %v", got)
	}
}

func TestLargeResultStreams(t *testing.T) {
	addr, _ := serve(t)
	res := query(t, addr, "SELECT range AS i, range::VARCHAR AS s FROM range(100000)")
	if res.NumRows() != 100000 || len(res.Batches) < 2 {
		t.Fatalf("%d rows in %d batches", res.NumRows(), len(res.Batches))
	}
	var sum int64
	for _, v := range column(res, "i") {
		sum += v.(int64)
	}
	if sum != 100000*99999/2 {
		t.Errorf("sum %d", sum)
	}
}

func countRuns(t *testing.T, addr string) int64 {
	t.Helper()
	return column(query(t, addr, "SELECT count(*)::BIGINT AS n FROM runs"), "n")[0].(int64)
}

func TestRefusedStatements(t *testing.T) {
	addr, _ := serve(t)
	for q, reason := range map[string]string{
		"INSERT INTO runs (run_id) VALUES ('evil')":  "INSERT writes to the database",
		"DELETE FROM runs":                           "DELETE writes to the database",
		"DROP TABLE runs":                            "DROP changes the database schema",
		"COPY runs TO '/tmp/trainscope-leak.csv'":    "COPY reads and writes files",
		"ATTACH '/tmp/x.duckdb' AS x":                "ATTACH opens another database",
		"SELECT * FROM read_csv('/etc/passwd')":      "read_csv reads files",
		"FROM '/etc/passwd'":                         `"/etc/passwd" would be read as a file`,
		"SELECT getenv('HOME')":                      "getenv reads the server's environment",
		"SELECT 1; DELETE FROM runs":                 "2 statements",
		"SET threads = 1":                            "SET changes settings",
		"WITH x AS (SELECT 1) DELETE FROM runs":      "DELETE writes",
		"EXPLAIN ANALYZE SELECT * FROM glob('/etc')": "glob reads files",
	} {
		_, err := flightsrv.Query(context.Background(), addr, q)
		var ref *flightsrv.RefusedError
		if !errors.As(err, &ref) {
			t.Errorf("%q: %v, want a refusal", q, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "server refused: ") || !strings.Contains(err.Error(), reason) {
			t.Errorf("%q: %q, want it to say %q", q, err, reason)
		}
	}
	if n := countRuns(t, addr); n != 2 {
		t.Errorf("runs has %d rows after the refused writes, want 2", n)
	}
}

func TestQueryErrors(t *testing.T) {
	addr, _ := serve(t)
	_, err := flightsrv.Query(context.Background(), addr, "SELECT * FROM no_such_table")
	var ref *flightsrv.RefusedError
	if err == nil || errors.As(err, &ref) || !strings.Contains(err.Error(), "query failed") || !strings.Contains(err.Error(), "no_such_table") {
		t.Errorf("unknown table: %v", err)
	}
	_, err = flightsrv.Query(context.Background(), addr, "SELEC 1")
	if err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Errorf("bad syntax: %v", err)
	}

	// Nothing listens on a port that was just closed.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	lis.Close()
	_, err = flightsrv.Query(context.Background(), dead, "SELECT 1")
	if err == nil || !strings.Contains(err.Error(), "no trainscope server at "+dead) || !strings.Contains(err.Error(), "trainscope serve") {
		t.Errorf("no server: %v", err)
	}
}

func client(t *testing.T, addr string) *flightsql.Client {
	t.Helper()
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// readAll DoGets every endpoint of info.
func readAll(t *testing.T, cl *flightsql.Client, info *flight.FlightInfo) (arrow.RecordBatch, error) {
	t.Helper()
	var recs []arrow.RecordBatch
	var sc *arrow.Schema
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(context.Background(), ep.Ticket)
		if err != nil {
			return nil, err
		}
		sc = rdr.Schema()
		for rdr.Next() {
			r := rdr.RecordBatch()
			r.Retain()
			recs = append(recs, r)
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return nil, err
		}
	}
	tbl := array.NewTableFromRecords(sc, recs)
	defer tbl.Release()
	for _, r := range recs {
		r.Release()
	}
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	if !tr.Next() {
		return array.NewRecordBatch(sc, nil, 0), nil
	}
	rec := tr.RecordBatch()
	rec.Retain()
	return rec, nil
}

// ADBC and JDBC run queries as prepared statements.
func TestPreparedStatements(t *testing.T) {
	addr, _ := serve(t)
	cl := client(t, addr)
	ctx := context.Background()
	prep, err := cl.Prepare(ctx, "SELECT run_id FROM runs ORDER BY run_id")
	if err != nil {
		t.Fatal(err)
	}
	info, err := prep.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := readAll(t, cl, info)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if rec.NumRows() != 2 || rec.Column(0).(*array.String).Value(1) != "r2" {
		t.Errorf("prepared result: %v", rec)
	}
	if err := prep.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}

	if _, err := cl.Prepare(ctx, "DELETE FROM runs"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("prepare DELETE: %v, want PermissionDenied", err)
	}
	if _, err := cl.ExecuteUpdate(ctx, "DELETE FROM runs"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("ExecuteUpdate: %v, want PermissionDenied", err)
	}
	if n := countRuns(t, addr); n != 2 {
		t.Errorf("runs has %d rows, want 2", n)
	}
}

// A client can forge a ticket or a handle without going through
// GetFlightInfo: DoGet checks the query again.
func TestForgedTicketsAreChecked(t *testing.T) {
	addr, _ := serve(t)
	cl := client(t, addr)
	ctx := context.Background()
	tkt, err := flightsql.CreateStatementQueryTicket([]byte("SELECT 1; DELETE FROM runs"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = readAll(t, cl, &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}}})
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("forged statement ticket: %v, want PermissionDenied", err)
	}

	prep, err := cl.Prepare(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	forged, err := cl.LoadPreparedStatementFromResult(&flightsql.CreatePreparedStatementResult{PreparedStatementHandle: []byte("DROP TABLE runs")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := forged.Execute(ctx); status.Code(err) != codes.PermissionDenied {
		t.Errorf("forged handle: %v, want PermissionDenied", err)
	}
	prep.Close(ctx)
	if n := countRuns(t, addr); n != 2 {
		t.Errorf("runs has %d rows, want 2", n)
	}
}

// Generic clients browse the catalog before they query.
func TestCatalog(t *testing.T) {
	addr, _ := serve(t)
	cl := client(t, addr)
	ctx := context.Background()

	info, err := cl.GetTables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := readAll(t, cl, info)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	kinds := map[string]string{}
	for i := 0; i < int(rec.NumRows()); i++ {
		name := rec.Column(2).(*array.String).Value(i)
		kinds[name] = rec.Column(3).(*array.String).Value(i)
		if name == "runs" {
			sc, err := flight.DeserializeSchema(rec.Column(4).(*array.Binary).Value(i), memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			if f, ok := sc.FieldsByName("world_size"); !ok || f[0].Type.ID() != arrow.INT32 {
				t.Errorf("runs schema: %s", sc)
			}
		}
	}
	if kinds["runs"] != "TABLE" || kinds["gpu_window"] != "VIEW" || kinds["metrics"] != "TABLE" {
		t.Errorf("tables: %v", kinds)
	}

	pattern := "met%"
	info, err = cl.GetTables(ctx, &flightsql.GetTablesOpts{TableNameFilterPattern: &pattern, TableTypes: []string{"TABLE"}})
	if err != nil {
		t.Fatal(err)
	}
	rec2, err := readAll(t, cl, info)
	if err != nil {
		t.Fatal(err)
	}
	defer rec2.Release()
	if rec2.NumRows() != 1 || rec2.Column(2).(*array.String).Value(0) != "metrics" {
		t.Errorf("filtered tables: %v", rec2)
	}

	for name, get := range map[string]func() (*flight.FlightInfo, error){
		"catalogs":    func() (*flight.FlightInfo, error) { return cl.GetCatalogs(ctx) },
		"schemas":     func() (*flight.FlightInfo, error) { return cl.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{}) },
		"table types": func() (*flight.FlightInfo, error) { return cl.GetTableTypes(ctx) },
		"sql info": func() (*flight.FlightInfo, error) {
			return cl.GetSqlInfo(ctx, []flightsql.SqlInfo{flightsql.SqlInfoFlightSqlServerReadOnly})
		},
	} {
		info, err := get()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		rec, err := readAll(t, cl, info)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if rec.NumRows() == 0 {
			t.Errorf("%s: no rows", name)
		}
		if name == "schemas" && !strings.Contains(rec.Column(1).ValueStr(0), "main") {
			t.Errorf("schemas: %v", rec)
		}
		rec.Release()
	}
}

// Queries run on their own connections while the store keeps writing.
func TestConcurrentReadsWhileWriting(t *testing.T) {
	addr, st := serve(t)
	ctx := context.Background()
	const readers, writes = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	stopReading := make(chan struct{})
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last int64
			for {
				select {
				case <-stopReading:
					return
				default:
				}
				res, err := flightsrv.Query(ctx, addr, "SELECT count(*)::BIGINT AS n FROM metrics")
				if err != nil {
					errs <- err
					return
				}
				n := column(res, "n")[0].(int64)
				res.Release()
				if n < last {
					errs <- errors.New("count went back")
					return
				}
				last = n
			}
		}()
	}
	for i := range writes {
		if err := st.Exec(ctx, "INSERT INTO metrics VALUES ('r3', 'd', ?, 0, 0, NULL, 'm', 1.0)", i); err != nil {
			t.Fatal(err)
		}
	}
	close(stopReading)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := column(query(t, addr, "SELECT count(*)::BIGINT AS n FROM metrics"), "n")[0].(int64); n != 3+writes {
		t.Errorf("%d metrics, want %d", n, 3+writes)
	}
}

func TestServeStopsWithContext(t *testing.T) {
	st, err := duck.Open(context.Background(), "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	addr, stop, err := flightsrv.Serve(ctx, "127.0.0.1:0", st, flightsrv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flightsrv.Query(context.Background(), addr.String(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := stop(); err != nil { // waits for the shutdown cancel started
		t.Fatal(err)
	}
	_, err = flightsrv.Query(context.Background(), addr.String(), "SELECT 1")
	if err == nil || !strings.Contains(err.Error(), "no trainscope server") {
		t.Errorf("after stop: %v", err)
	}
}
