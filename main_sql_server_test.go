package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/sql/flightsrv"
)

// sqlServerFixture writes a small database file, then serves it read-only
// over Flight SQL in-process. The file stays readable by --db as well
// (read-only opens share it), so both paths can be compared.
func sqlServerFixture(t *testing.T) (db, addr string) {
	t.Helper()
	ctx := context.Background()
	db = filepath.Join(t.TempDir(), "served.duckdb")
	st, err := duck.Open(ctx, db, duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO runs VALUES ('r1', 'pytorch', 'llama', 8, 'H100', 1700000000000000000, 1700000000500000000, ['a.json', 'b.json']),
		                         ('r2', 'pytorch', 'moe, "big"', 16, NULL, 1700000001000000000, NULL, NULL)`,
		`INSERT INTO metrics VALUES ('r1', 'temporal_breakdown', 0, 1, 5, NULL, 'idle_pct', 12.5),
		                            ('r2', 'temporal_breakdown', 0, 1, 5, NULL, 'idle_pct', 7.25)`,
	} {
		if err := st.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	served, err := duck.Open(ctx, db, duck.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { served.Close() })
	a, stop, err := flightsrv.Serve(ctx, "127.0.0.1:0", served, flightsrv.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop() })
	return db, a.String()
}

func runSQLArgs(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	err := runSQL(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

// --server prints what --db prints, in every format.
func TestSQLServerMatchesDB(t *testing.T) {
	db, addr := sqlServerFixture(t)
	const q = `SELECT run_id, model, world_size, gpu_type, start_ns, end_ns, sources,
		TIMESTAMP '2024-01-02 03:04:05.5' AS ts, 1.5::DOUBLE AS f, true AS ok
		FROM runs ORDER BY run_id`
	for _, format := range []string{"table", "csv", "json"} {
		viaServer, _, err := runSQLArgs("--server", addr, "--format", format, q)
		if err != nil {
			t.Fatalf("%s via server: %v", format, err)
		}
		viaDB, _, err := runSQLArgs("--db", db, "--format", format, q)
		if err != nil {
			t.Fatalf("%s via db: %v", format, err)
		}
		if viaServer != viaDB {
			t.Errorf("%s: --server printed\n%s\n--db printed\n%s", format, viaServer, viaDB)
		}
	}
}

func TestSQLServerOutput(t *testing.T) {
	_, addr := sqlServerFixture(t)
	out, _, err := runSQLArgs("--server", addr, "SELECT run_id, avg(value) AS v FROM metrics GROUP BY run_id ORDER BY run_id")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"run_id  v", "r1      12.5", "r2      7.25", "(2 rows)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table output lacks %q:\n%s", want, out)
		}
	}

	out, _, err = runSQLArgs("--server", "grpc://"+addr, "--format", "json", "SELECT run_id, world_size, sources FROM runs ORDER BY run_id")
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if len(rows) != 2 || rows[0]["run_id"] != "r1" || rows[1]["world_size"] != float64(16) || rows[1]["sources"] != nil {
		t.Errorf("json rows: %v", rows)
	}
	if src, _ := rows[0]["sources"].([]any); len(src) != 2 || src[1] != "b.json" {
		t.Errorf("sources: %v", rows[0]["sources"])
	}

	out, _, err = runSQLArgs("--server", addr, "--format", "csv", "SELECT model FROM runs ORDER BY run_id")
	if err != nil {
		t.Fatal(err)
	}
	if out != "model\nllama\n\"moe, \"\"big\"\"\"\n" {
		t.Errorf("csv: %q", out)
	}
}

func TestSQLServerRefusals(t *testing.T) {
	_, addr := sqlServerFixture(t)
	for q, want := range map[string]string{
		"COPY runs TO '/tmp/trainscope-cli-leak.csv'": "server refused: COPY reads and writes files",
		"DELETE FROM runs":                            "server refused: DELETE writes to the database",
		"SELECT * FROM read_csv('/etc/passwd')":       "server refused: read_csv reads files",
		"SELECT * FROM no_such_table":                 "query failed",
	} {
		_, _, err := runSQLArgs("--server", addr, q)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", q, err, want)
			continue
		}
		var errOut bytes.Buffer
		if code := cli.ExitCode(err, &errOut); code != 2 || !strings.HasPrefix(errOut.String(), "trainscope: ") {
			t.Errorf("%q: exit %d, stderr %q; want 2", q, code, errOut.String())
		}
	}
	out, _, err := runSQLArgs("--server", addr, "--format", "csv", "SELECT count(*) AS n FROM runs")
	if err != nil || out != "n\n2\n" {
		t.Errorf("after refusals: %q, %v", out, err)
	}
}

func TestSQLServerFlags(t *testing.T) {
	for _, args := range [][]string{
		{"SELECT 1"},
		{"--db", "x.duckdb", "--server", "localhost:1", "SELECT 1"},
	} {
		_, _, err := runSQLArgs(args...)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "exactly one of --db FILE") || !strings.Contains(err.Error(), "--server ADDR") {
			t.Errorf("%v: %v, want a usage error naming both flags", args, err)
		}
	}
	out, _, err := runSQLArgs("--help")
	if err != cli.ErrHelp || !strings.Contains(out, "--server ADDR") || !strings.Contains(out, "trainscope sql --server ") {
		t.Errorf("help: %v\n%s", err, out)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	lis.Close()
	_, _, err = runSQLArgs("--server", dead, "SELECT 1")
	if err == nil || !strings.Contains(err.Error(), "no trainscope server at "+dead) || !strings.Contains(err.Error(), "trainscope serve") {
		t.Errorf("no server: %v", err)
	}
}

// A type the client cannot print (DuckDB's BIGNUM comes as an opaque
// Arrow extension) is shown as its bytes instead of panicking the client;
// a result larger than one table block prints like --db.
func TestSQLServerOddTypesAndLongResults(t *testing.T) {
	db, addr := sqlServerFixture(t)
	out, _, err := runSQLArgs("--server", addr, "SELECT 123::BIGNUM AS b, 'x' AS s")
	if err != nil || !strings.Contains(out, "0x") || !strings.Contains(out, "(1 rows)") {
		t.Errorf("BIGNUM: %v\n%s", err, out)
	}
	const q = "SELECT range AS i, repeat('x', (range % 97)::INTEGER) AS s FROM range(2500) ORDER BY i"
	for _, format := range []string{"table", "csv", "json"} {
		viaServer, _, err := runSQLArgs("--server", addr, "--format", format, q)
		if err != nil {
			t.Fatal(err)
		}
		viaDB, _, err := runSQLArgs("--db", db, "--format", format, q)
		if err != nil {
			t.Fatal(err)
		}
		if viaServer != viaDB || strings.Count(viaDB, "\n") < 2500 {
			t.Errorf("%s: --server and --db differ (or too short: %d lines)", format, strings.Count(viaDB, "\n"))
		}
	}
}
