package flightsrv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/sql/flightsrv"
)

// hangGuard only catches a query that was never stopped: every bound
// below is reached in well under it, and no test measures speed.
const hangGuard = 60 * time.Second

// longPlanning is a query whose cost is all in planning: DuckDB folds each
// constant expression while it prepares the statement, 20 strings of 20 MB
// built and measured one after the other (3 to 7 s a prepare on a loaded
// 2-core machine, some 60 MB at a time), far past the limits below.
func longPlanning() string {
	cols := make([]string, 20)
	for i := range cols {
		cols[i] = fmt.Sprintf("length(repeat('ab', %d)) AS c%d", 10_000_000+i, i)
	}
	return "SELECT " + strings.Join(cols, ", ")
}

type statementQuery string

func (q statementQuery) GetQuery() string         { return string(q) }
func (q statementQuery) GetTransactionId() []byte { return nil }

// The time limit covers planning too. The server prepares a query when a
// client asks for it (GetFlightInfo, to report syntax and binding errors
// early) and again before running it; DuckDB plans while it prepares, and
// one query (length(repeat('ab', 1.1e9))) spent minutes there, past a 10 s
// limit, at 4.5 GB. Now DuckDB is interrupted at the limit wherever it is,
// and the client hears that the limit ended the query; the server goes on.
func TestTimeLimitCoversPlanning(t *testing.T) {
	st, err := duck.Open(context.Background(), "", duck.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := flightsrv.NewServer(st, flightsrv.Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	_, err = srv.GetFlightInfoStatement(context.Background(), statementQuery(longPlanning()), &flight.FlightDescriptor{})
	if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "serve.query.timeout") {
		t.Errorf("GetFlightInfo of a query that plans for seconds, with a 200 ms limit: %v; want DeadlineExceeded naming serve.query.timeout", err)
	}
	if took := time.Since(t0); took > hangGuard {
		t.Errorf("planning ran %s past a 200 ms limit: it was not interrupted", took)
	}

	addr := serveWith(t, flightsrv.Options{Timeout: time.Second})
	for name, q := range map[string]string{
		"planning":  longPlanning(),
		"execution": "SELECT count(*) FROM range(1000000) a, range(1000000) b", // 10^12 rows
	} {
		t0 := time.Now()
		_, err := flightsrv.Query(context.Background(), addr, q)
		if err == nil || !strings.Contains(err.Error(), "ran longer than this server's limit of 1s (serve.query.timeout)") {
			t.Errorf("%s past the limit: %v", name, err)
		}
		if took := time.Since(t0); took > hangGuard {
			t.Errorf("%s: the query ran %s past its 1 s limit: it was not interrupted", name, took)
		}
		res, err := flightsrv.Query(context.Background(), addr, "SELECT 42 AS x")
		if err != nil || res.NumRows() != 1 {
			t.Fatalf("the next query, after %s was stopped: %v", name, err)
		}
		res.Release()
	}
}

// The row limit stops the query where it is reached: the client gets the
// first max_rows rows, then ResourceExhausted naming the limit, and the
// server never builds the rest. It used to build the whole result first
// (SELECT * FROM range(1e9): 2.33 GB and not one row sent before its
// time limit); here a row past the first 10M fails the query, so a server
// that builds ahead reports that error instead of the limit.
func TestRowLimitStopsTheQuery(t *testing.T) {
	addr := serveWith(t, flightsrv.Options{MaxRows: 1000, Timeout: 10 * time.Minute})
	for _, q := range []string{
		"SELECT * FROM range(1000000000)",
		"SELECT CASE WHEN range < 10000000 THEN range ELSE error('the server built rows past the first 10M') END AS i FROM range(1000000000)",
	} {
		t0 := time.Now()
		var rows int64
		err := flightsrv.Dialer{}.Stream(context.Background(), addr, q, func(_ *arrow.Schema, rec arrow.RecordBatch) error {
			if rec != nil {
				rows += rec.NumRows()
			}
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "more than 1000 rows") || !strings.Contains(err.Error(), "serve.query.max_rows") {
			t.Errorf("%s: %v; want the row limit", q, err)
		}
		if rows != 1000 {
			t.Errorf("%s: %d rows before the error, want the limit, 1000", q, rows)
		}
		// a billion rows take minutes to build here
		if took := time.Since(t0); took > hangGuard {
			t.Errorf("%s: %s to send 1000 rows: the server built the result first", q, took)
		}
	}
	if res, err := flightsrv.Query(context.Background(), addr, "SELECT range FROM range(1000)"); err != nil || res.NumRows() != 1000 {
		t.Errorf("at the limit: %v", err)
	}
}

// A query that needs more memory than the database may use fails with
// ResourceExhausted naming the server's setting (DuckDB's own advice, SET
// this or that, is no use to a client who cannot SET), and the server
// answers the next query.
func TestOutOfMemoryNamesTheLimit(t *testing.T) {
	st, err := duck.Open(context.Background(), "", duck.Options{Threads: 2, MemoryLimit: "64MB"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	addr, stop, err := flightsrv.Serve(context.Background(), "127.0.0.1:0", st, flightsrv.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop() })
	// a list of 50M BIGINTs is 400 MB, in one aggregate state
	_, err = flightsrv.Query(context.Background(), addr.String(), "SELECT length(list(range)) FROM range(50000000)")
	if err == nil || !strings.Contains(err.Error(), "Out of Memory") || !strings.Contains(err.Error(), "serve.query.memory_limit") || strings.Contains(err.Error(), "SET threads") {
		t.Errorf("over the memory limit: %v", err)
	}
	if res, err := flightsrv.Query(context.Background(), addr.String(), "SELECT 42 AS x"); err != nil || res.NumRows() != 1 {
		t.Fatalf("the next query: %v", err)
	}
}

// Lockdown: DuckDB itself refuses what the read-only checks refuse first,
// files outside the database's own folders and (locked) every setting,
// while the views over the files the database serves keep working.
func TestLockdown(t *testing.T) {
	ctx := context.Background()
	own, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.csv")
	if err := os.WriteFile(secret, []byte("k,v\nkey,hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, lock := range []bool{true, false} {
		t.Run(fmt.Sprintf("lock=%v", lock), func(t *testing.T) {
			st, err := duck.Open(ctx, "", duck.Options{Threads: 2, MemoryLimit: "1GB"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			dir := filepath.Join(own, fmt.Sprint(lock))
			os.MkdirAll(dir, 0o755)
			for _, q := range []string{
				"COPY (SELECT range AS i FROM range(100)) TO " + duck.Literal(filepath.Join(dir, "a.parquet")),
				"CREATE VIEW served AS SELECT * FROM read_parquet(" + duck.Literal(filepath.Join(dir, "*.parquet")) + ")",
			} {
				if err := st.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if err := (flightsrv.Lockdown{Dirs: []string{dir}, Lock: lock}).Apply(ctx, st); err != nil {
				t.Fatal(err)
			}
			addr, stop, err := flightsrv.Serve(ctx, "127.0.0.1:0", st, flightsrv.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { stop() })
			res, err := flightsrv.Query(ctx, addr.String(), "SELECT count(*)::BIGINT AS n FROM served")
			if err != nil || res.NumRows() != 1 {
				t.Fatalf("the view over the database's own files, locked down: %v", err)
			}
			res.Release()
			// the database's own writes into its folder go on
			if err := st.Exec(ctx, "COPY (SELECT range AS i FROM range(5)) TO "+duck.Literal(filepath.Join(dir, "b.parquet"))); err != nil {
				t.Errorf("the writer's COPY into its own folder: %v", err)
			}

			// On a query connection directly: what the read-only checks
			// would refuse before DuckDB saw it.
			r, err := st.NewReader(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			run := func(q string) error {
				rdr, err := r.QueryArrow(ctx, q)
				if err != nil {
					return err
				}
				defer rdr.Release()
				for rdr.Next() {
				}
				return rdr.Err()
			}
			refused := []string{
				"SELECT * FROM read_csv(" + duck.Literal(secret) + ")",
				"SELECT * FROM read_text(" + duck.Literal(secret) + ")",
				"SELECT * FROM read_text(" + duck.Literal(filepath.Join(dir, "..", filepath.Base(outside), "secret.csv")) + ")",
				"SELECT * FROM glob(" + duck.Literal(filepath.Join(outside, "*")) + ")",
				"SELECT * FROM " + duck.Literal(secret),
				"COPY (SELECT 1) TO " + duck.Literal(filepath.Join(outside, "out.csv")),
				"ATTACH " + duck.Literal(filepath.Join(outside, "other.duckdb")),
				"INSTALL httpfs",
				"LOAD httpfs",
				"SET enable_external_access = true",
				"SET allowed_directories = ['/']",
			}
			if lock {
				refused = append(refused,
					"SET memory_limit = '100GB'",
					"RESET memory_limit",
					"SET threads = 64",
					"SET lock_configuration = false",
				)
			}
			// DuckDB's reasons: no file access, a locked configuration, or
			// settings that cannot be undone while the database runs
			reasons := []string{"disabled by configuration", "disabled through configuration", "the configuration has been locked",
				"Cannot enable external access while database is running", "Cannot change allowed_directories when enable_external_access is disabled"}
			for _, q := range refused {
				err := run(q)
				if err == nil {
					t.Errorf("%s: ran on a locked-down database", q)
					continue
				}
				if !slices.ContainsFunc(reasons, func(r string) bool { return strings.Contains(err.Error(), r) }) {
					t.Errorf("%s: %v; want DuckDB to refuse it for the lockdown", q, err)
				}
			}
			for _, f := range []string{"out.csv", "other.duckdb"} {
				if _, err := os.Stat(filepath.Join(outside, f)); err == nil {
					t.Errorf("%s was written outside the allowed folder", f)
				}
			}
			var limit string
			rdr, err := r.QueryArrow(ctx, "SELECT current_setting('memory_limit') AS m")
			if err != nil {
				t.Fatal(err)
			}
			for rdr.Next() {
				limit = rdr.RecordBatch().Column(0).ValueStr(0)
			}
			rdr.Release()
			if limit == "" || strings.HasPrefix(limit, "93") { // 100GB reads 93.1 GiB
				t.Errorf("memory_limit is %q", limit)
			}
			if !lock {
				// a writer beside the queries may change settings
				if err := run("SET memory_limit = '512MB'"); err != nil {
					t.Errorf("unlocked, SET memory_limit: %v", err)
				}
			}
		})
	}
}
