package flightsrv

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckReadOnly(t *testing.T) {
	allowed := []string{
		"SELECT 1",
		"select * from runs where run_id = 'r1';",
		"  SELECT 1 ; ",
		"SELECT 1 -- trailing comment",
		"/* leading */ SELECT 1 /* ; nested /* ; */ ; */",
		"WITH k AS (SELECT * FROM slices WHERE kind = 'kernel') SELECT count(*) FROM k",
		"FROM runs",
		"FROM runs SELECT run_id",
		"VALUES (1, 'a'), (2, 'b')",
		"TABLE runs",
		"(SELECT 1) UNION ALL (SELECT 2)",
		"DESCRIBE runs",
		"DESCRIBE SELECT * FROM runs",
		"SHOW TABLES",
		"SHOW ALL TABLES",
		"SUMMARIZE runs",
		"EXPLAIN SELECT * FROM runs",
		"EXPLAIN ANALYZE SELECT count(*) FROM slices",
		"SELECT * FROM range(10) t(i)",
		"SELECT unnest([1, 2, 3])",
		"SELECT table_name FROM duckdb_tables()",
		"SELECT * FROM information_schema.tables",
		"SELECT * FROM pragma_table_info('runs')",
		"SELECT * FROM interval_union(gpu_window)",
		"WITH k AS (SELECT 1 AS g, 0 AS s, 5 AS e) FROM interval_union(k)",
		"SELECT fmt_ns(1500), pct(1, 4)",
		"SELECT 'read_csv(''x.csv'')' AS not_a_call, $$COPY t TO 'x'$$ AS nor_this",
		"SELECT E'it\\'s; fine'",
		"SELECT \"run_id\" FROM \"runs\"",
		"FROM runs PIVOT (count(*) FOR run_id IN ('a'))",
		"SELECT current_setting('threads'), currval IS NULL FROM (SELECT NULL AS currval)",
	}
	for _, q := range allowed {
		if err := CheckReadOnly(q); err != nil {
			t.Errorf("CheckReadOnly(%q) = %v, want allowed", q, err)
		}
	}

	refused := []struct{ q, why string }{
		{"INSERT INTO runs (run_id) VALUES ('x')", "INSERT writes to the database"},
		{"insert into runs select * from runs", "INSERT writes"},
		{"UPDATE runs SET framework = 'x'", "UPDATE writes"},
		{"DELETE FROM findings", "DELETE writes"},
		{"TRUNCATE findings", "TRUNCATE writes"},
		{"CREATE TABLE t AS SELECT 1", "CREATE changes the database schema"},
		{"CREATE OR REPLACE MACRO f() AS 1", "CREATE changes"},
		{"DROP TABLE runs", "DROP changes"},
		{"ALTER TABLE runs ADD COLUMN x INT", "ALTER changes"},
		{"ATTACH '/tmp/other.duckdb' AS o", "ATTACH opens another database"},
		{"DETACH o", "DETACH"},
		{"INSTALL httpfs", "INSTALL downloads"},
		{"LOAD httpfs", "LOAD loads code"},
		{"FORCE INSTALL httpfs", "FORCE"},
		{"COPY runs TO '/tmp/runs.csv'", "COPY reads and writes files"},
		{"COPY (SELECT 1) TO '/tmp/x.parquet' (FORMAT parquet)", "COPY"},
		{"EXPORT DATABASE '/tmp/dump'", "EXPORT writes files"},
		{"IMPORT DATABASE '/tmp/dump'", "IMPORT reads files"},
		{"PRAGMA enable_profiling", "PRAGMA changes settings"},
		{"SET threads = 1", "SET changes settings"},
		{"RESET threads", "RESET changes settings"},
		{"CALL checkpoint()", "CALL runs table functions"},
		{"CHECKPOINT", "CHECKPOINT writes the database file"},
		{"BEGIN TRANSACTION", "controls transactions"},
		{"USE memory", "USE changes the default database"},
		{"SELECT 1; SELECT 2", "2 statements"},
		{"SELECT 1; DROP TABLE runs", "2 statements (SELECT, DROP)"},
		{"SELECT * FROM read_csv('/etc/passwd')", "read_csv reads files"},
		{"SELECT * FROM read_csv_auto('x.csv')", "read_csv_auto reads files"},
		{"FROM read_json('http://example.com/x.json')", "read_json reads files"},
		{"FROM read_ndjson_objects('x')", "read_ndjson_objects reads files"},
		{"SELECT * FROM read_parquet('s3://bucket/x.parquet')", "read_parquet reads files"},
		{"SELECT * FROM parquet_scan('x.parquet')", "parquet_scan reads files"},
		{"SELECT * FROM parquet_metadata('x.parquet')", "parquet_metadata reads files"},
		{"SELECT content FROM read_text('/etc/passwd')", "read_text reads files"},
		{"SELECT * FROM read_blob('/etc/shadow')", "read_blob reads files"},
		{"SELECT * FROM glob('/home/*')", "glob reads files"},
		{"FROM sniff_csv('x.csv')", "sniff_csv reads files"},
		{"FROM iceberg_scan('s3://b/t')", "iceberg_scan reads files"},
		{"FROM delta_scan('s3://b/t')", "delta_scan reads files"},
		{"FROM query('DROP TABLE runs')", "query runs SQL built at run time"},
		{"FROM query_table('runs')", "query_table runs SQL"},
		{"FROM json_execute_serialized_sql('{}')", "json_execute_serialized_sql runs SQL"},
		{"SELECT * FROM 'x.csv'", `"x.csv" would be read as a file`},
		{"FROM '/etc/passwd'", `"/etc/passwd" would be read as a file`},
		{"SELECT * FROM (FROM 'data/*.parquet')", `"data/*.parquet" would be read`},
		{`FROM "runs.parquet"`, `"runs.parquet" would be read`},
		{"SELECT * FROM 's3://bucket/key'", `"s3://bucket/key" would be read`},
		{"DESCRIBE 'x.csv'", `"x.csv" would be read`},
		{"SUMMARIZE SELECT * FROM read_csv('x')", "read_csv reads files"},
		{"EXPLAIN ANALYZE SELECT * FROM read_csv('x')", "read_csv reads files"},
		{"EXPLAIN COPY runs TO 'x.csv'", "COPY reads and writes files"},
		{"SELECT getenv('HOME')", "getenv reads the server's environment"},
		{"SELECT list_transform([1], x -> main.getenv('A'))", "getenv reads"},
		{"SELECT (SELECT count(*) FROM read_parquet('a'))", "read_parquet reads files"},
		{"SELECT * FROM range(3) t(i), LATERAL (SELECT * FROM read_text('x'))", "read_text reads files"},
		{`FROM "read_csv"('x')`, "read_csv reads files"},
		{"SELECT nextval('seq')", "nextval advances a sequence"},
		{"FROM duckdb_secrets()", "duckdb_secrets exposes or loads credentials"},
		{"FROM checkpoint()", "checkpoint changes the state"},
		{"FROM histogram(runs, run_id)", "table function histogram is not allowed"},
		{"FROM interval_union('/etc/passwd')", "would be read as a file"},
		{"FROM interval_union((SELECT 1))", "takes the name of a table"},
		{"WITH x AS (SELECT 1) INSERT INTO runs (run_id) SELECT 'a'", "INSERT writes"},
		{"PIVOT runs ON run_id USING count(*)", "PIVOT without an IN list"},
		{"PREPARE p AS SELECT 1", "PREPARE is SQL-level"},
		{"SELECT '1.2.3.4'::INET", "type inet is not built into this server"},
		{"SELECT CAST('a' AS STRUCT(a INET))", "type inet is not built into"},
		{"SELECT ST_Point(1, 2)", "function st_point is not built into this server"},
		{"SELECT st_union_agg(g) OVER () FROM (SELECT 1 AS g)", "function st_union_agg is not built into"},
		{"SELECT 1\x00; DROP TABLE runs", "NUL byte"},
		{"SELECT '\xff'", "not valid UTF-8"},
	}
	for _, c := range refused {
		err := CheckReadOnly(c.q)
		var ref *RefusedError
		if !errors.As(err, &ref) {
			t.Errorf("CheckReadOnly(%q) = %v, want a refusal", c.q, err)
			continue
		}
		if !strings.Contains(err.Error(), c.why) {
			t.Errorf("CheckReadOnly(%q) = %q, want it to say %q", c.q, err, c.why)
		}
	}

	// Not refusals but errors all the same: nothing to run, or bad syntax.
	for _, q := range []string{"", "   ", ";", "-- only a comment", "SELECT 1 +", "SELECT 'unterminated", "/* open"} {
		err := CheckReadOnly(q)
		var ref *RefusedError
		if err == nil || errors.As(err, &ref) {
			t.Errorf("CheckReadOnly(%q) = %v, want a plain error", q, err)
		}
	}
}

// Every detector is a SELECT over the schema: the checker must let all of
// them through (they are the queries dashboards will run too).
func TestDetectorQueriesAllowed(t *testing.T) {
	files, err := filepath.Glob("../../detectors/sql/*.sql")
	if err != nil || len(files) == 0 {
		t.Skip("no detector queries found")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckReadOnly(string(b)); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}

// What runs for EXPLAIN is rebuilt from the checked query, not cut out of
// the client's text.
func TestRunnableExplain(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT 1":                     "SELECT 1",
		"explain  /* c */ SELECT 1":    "EXPLAIN SELECT 1",
		"EXPLAIN ANALYZE\n  FROM runs": "EXPLAIN ANALYZE FROM runs",
		"  EXPLAIN analyse SELECT 2;":  "EXPLAIN ANALYZE SELECT 2;",
	} {
		got, err := runnable(q, 0)
		if err != nil || got != want {
			t.Errorf("runnable(%q) = %q, %v; want %q", q, got, err, want)
		}
	}
	if _, err := runnable("EXPLAIN EXPLAIN SELECT 1", 0); err == nil {
		t.Error("EXPLAIN EXPLAIN: want a refusal")
	}
}

func TestLexer(t *testing.T) {
	toks, err := lex(`SELECT "a""b", 'c''d', E'e\'f', $t$g;h$t$, $1, ?, x.y -- z
		/* w */ ;`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		got = append(got, tk.text)
	}
	want := []string{"SELECT", `a"b`, ",", "c'd", ",", "e'f", ",", "g;h", ",", "$1", ",", "?", ",", "x", ".", "y", ";"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tokens %q\nwant   %q", got, want)
	}
	if n := len(statements(toks)); n != 1 {
		t.Errorf("%d statements, want 1", n)
	}
}

func TestMatchLike(t *testing.T) {
	p := func(s string) *string { return &s }
	for _, c := range []struct {
		pattern *string
		v       string
		want    bool
	}{
		{nil, "anything", true},
		{p("%"), "runs", true},
		{p("run_"), "runs", true},
		{p("run_"), "run", false},
		{p("mem\\_%"), "mem_blocks", true},
		{p("mem\\_%"), "memXblocks", false},
		{p("gpu.window"), "gpu_window", false},
	} {
		if got := matchLike(c.pattern, c.v); got != c.want {
			t.Errorf("matchLike(%v, %q) = %v", *c.pattern, c.v, got)
		}
	}
}

// FuzzCheckReadOnly: whatever the input, the checker answers without
// panicking, and never lets through a query the lexer sees as several
// statements.
func FuzzCheckReadOnly(f *testing.F) {
	for _, s := range []string{
		"SELECT 1", "FROM runs", "SELECT 1; SELECT 2", "COPY runs TO 'x'", "FROM 'x.csv'",
		"SELECT * FROM read_csv('x')", "EXPLAIN ANALYZE SELECT 1", "SELECT $$a$$", "SELECT E'\\''",
		"/* /* */ */ SELECT 1", "SELECT \"a\"\"b\"", "WITH x AS (SELECT 1) FROM x", "DESCRIBE runs",
		"SELECT $tag$ ; $tag$", "SELECT ?", "EXPLAIN", "(((", "'", "\"", "$", "$$", "E'", "\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		err := CheckReadOnly(q)
		if err != nil {
			return
		}
		toks, lerr := lex(q)
		if lerr != nil {
			t.Fatalf("allowed %q, which the lexer cannot read: %v", q, lerr)
		}
		if n := len(statements(toks)); n != 1 {
			t.Fatalf("allowed %q with %d statements", q, n)
		}
	})
}
