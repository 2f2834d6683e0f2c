package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/server"
	"github.com/trainscope/trainscope/sql/archive/s3fake"
	"github.com/trainscope/trainscope/sql/duck"
)

// README's Trino example matches the archive: its CREATE TABLE declares
// the columns, in order and with the types, that the archive's findings
// files hold (then the hive partitions), and its query runs, with DuckDB
// standing in for Trino, over an archive that analyze --archive wrote,
// counting every finding of the run once.
func TestReadmeArchiveExample(t *testing.T) {
	ctx := context.Background()
	arch, db := t.TempDir(), filepath.Join(t.TempDir(), "run.duckdb")
	var out, errOut bytes.Buffer
	if code := run(ctx, append([]string{"analyze", "-q", "--archive", arch, "--db", db, "-o", filepath.Join(t.TempDir(), "r.md")}, sampleRun...), &out, &errOut); code != 0 {
		t.Fatalf("analyze exit %d: %s", code, errOut.String())
	}
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	m := regexp.MustCompile(`(?s)CREATE TABLE hive\.trainscope\.findings \((.*?)\)\nWITH`).FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("README lacks the Trino CREATE TABLE of findings")
	}
	var declared []string
	for _, c := range strings.Split(m[1], ",") {
		declared = append(declared, strings.Join(strings.Fields(c), " "))
	}
	q := regexp.MustCompile(`(?s)\n(SELECT day, detector.*?);\n`).FindStringSubmatch(readme)
	if q == nil {
		t.Fatal("README lacks the Trino example query")
	}

	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	glob := filepath.Join(arch, "findings", "*", "*", "*.parquet")
	src := "read_parquet('" + glob + "', hive_partitioning = true, hive_types = {'day': VARCHAR, 'run': VARCHAR})"
	trino := map[string]string{"VARCHAR": "varchar", "INTEGER": "integer", "BIGINT": "bigint", "DOUBLE": "double", "BOOLEAN": "boolean"}
	rows, err := st.Query(ctx, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+src+")")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		tt, ok := trino[typ]
		if !ok {
			tt = "(no Trino type for " + typ + ")"
		}
		files = append(files, name+" "+tt)
	}
	rows.Close()
	if strings.Join(declared, ", ") != strings.Join(files, ", ") {
		t.Errorf("README declares\n  %s\nthe archive's files hold\n  %s", strings.Join(declared, ", "), strings.Join(files, ", "))
	}

	query := strings.Replace(q[1], "hive.trainscope.findings", src, 1)
	var groups, total, runs int
	if err := st.Conn().QueryRowContext(ctx, "SELECT count(*), sum(findings), max(runs) FROM ("+query+")").Scan(&groups, &total, &runs); err != nil {
		t.Fatalf("the README's query: %v\n%s", err, query)
	}
	var want, detectors int
	counts := sqlOut(t, "--db", db, "SELECT count(*), count(DISTINCT detector) FROM findings")
	lines := strings.Split(strings.TrimSpace(counts), "\n")
	if _, err := fmt.Sscanf(lines[len(lines)-1], "%d,%d", &want, &detectors); err != nil {
		t.Fatalf("sql said %q: %v", counts, err)
	}
	if want == 0 || total != want || groups != detectors || runs != 1 {
		t.Errorf("the README's query counts %d findings in %d groups over %d runs; the run has %d findings of %d detectors", total, groups, runs, want, detectors)
	}
}

// An archive in an S3-compatible bucket end to end: analyze --archive
// s3://... uploads the run, and a query node over the bucket (which it
// mirrors) answers as analyze's database does.
func TestArchiveInABucketEndToEnd(t *testing.T) {
	ctx := context.Background()
	fake, endpoint := s3fake.Start(t)
	conf := filepath.Join(t.TempDir(), "trainscope.yaml")
	if err := os.WriteFile(conf, []byte("serve:\n  archive_s3: {endpoint: \""+endpoint+"\", insecure: true, access_key: k, secret_key: s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "run.duckdb")
	var out, errOut bytes.Buffer
	if code := run(ctx, append([]string{"analyze", "-q", "--config", conf, "--archive", "s3://fleet/prod", "--run", "s3run", "--db", db, "-o", filepath.Join(t.TempDir(), "r.md")}, sampleRun...), &out, &errOut); code != 0 {
		t.Fatalf("analyze exit %d: %s", code, errOut.String())
	}
	keys := fake.Keys("fleet")
	if len(keys) < 8 || !strings.HasPrefix(keys[0], "prod/") {
		t.Fatalf("bucket holds %v", keys)
	}
	cfg, err := config.Load(conf)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Serve.DataDir, cfg.Serve.HTTP, cfg.Serve.Flight = t.TempDir(), "127.0.0.1:0", "127.0.0.1:0"
	cfg.Serve.Archive, cfg.Serve.QueryOnly = "s3://fleet/prod", true
	qn, err := server.StartQueryNode(ctx, cfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer qn.Shutdown()
	if h := waitGet(t, "http://"+qn.HTTPAddr()+"/healthz", 10*time.Second); !strings.Contains(h, `"mode":"query-only"`) || !strings.Contains(h, `"status":"ok"`) {
		t.Errorf("/healthz of the query node: %s", h)
	}
	for _, q := range []string{
		"SELECT * FROM findings ORDER BY ALL",
		"SELECT rank, count(*), sum(dur) FROM slices GROUP BY ALL ORDER BY ALL",
	} {
		if got, want := sqlOut(t, "--server", qn.FlightAddr(), q), sqlOut(t, "--db", db, q); got != want {
			t.Errorf("%s\n%s", q, lineDiff(got, want))
		}
	}
}
