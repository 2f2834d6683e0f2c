package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/internal/server"
	"github.com/trainscope/trainscope/sql/duck"
)

// readerRun runs q on a connection of st's database of its own, past the
// Flight server's read-only checks, as a query that slipped through them
// would run.
func readerRun(t *testing.T, st *duck.Store, q string) error {
	t.Helper()
	r, err := st.NewReader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rdr, err := r.QueryArrow(context.Background(), q)
	if err != nil {
		return err
	}
	defer rdr.Release()
	for rdr.Next() {
	}
	return rdr.Err()
}

// A query node's database reads the archive's folder and nothing else,
// and its settings are locked; its views over the archive answer as
// analyze's database does.
func TestServeQueryNodeLockedDown(t *testing.T) {
	ctx := context.Background()
	arch, db := t.TempDir(), filepath.Join(t.TempDir(), "run.duckdb")
	var out, errOut bytes.Buffer
	if code := run(ctx, append([]string{"analyze", "-q", "--archive", arch, "--db", db, "-o", filepath.Join(t.TempDir(), "r.md")}, sampleRun...), &out, &errOut); code != 0 {
		t.Fatalf("analyze exit %d: %s", code, errOut.String())
	}
	secret := filepath.Join(t.TempDir(), "secret.csv")
	os.WriteFile(secret, []byte("k,v\nkey,hunter2\n"), 0o600)
	cfg := serveConfig(t)
	cfg.Serve.Archive, cfg.Serve.QueryOnly = arch, true
	qn, err := server.StartQueryNode(ctx, cfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer qn.Shutdown()
	for _, q := range []string{
		"SELECT * FROM findings ORDER BY ALL",
		"SELECT rank, count(*), sum(dur) FROM slices GROUP BY ALL ORDER BY ALL",
	} {
		if got, want := sqlOut(t, "--server", qn.FlightAddr(), q), sqlOut(t, "--db", db, q); got != want {
			t.Errorf("%s\n%s", q, lineDiff(got, want))
		}
	}
	for _, c := range []struct{ q, want string }{
		{"SELECT * FROM read_csv(" + duck.Literal(secret) + ")", "disabled by configuration"},
		{"SELECT * FROM read_text('/etc/hostname')", "disabled by configuration"},
		{"SET memory_limit = '100GB'", "the configuration has been locked"},
		{"SET enable_external_access = true", "the configuration has been locked"},
	} {
		if err := readerRun(t, qn.Store(), c.q); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on the query node's database: %v; want %q", c.q, err, c.want)
		}
	}
	// the archive itself stays readable: the views read it
	if err := readerRun(t, qn.Store(), "SELECT count(*) FROM read_parquet("+duck.Literal(filepath.Join(arch, "findings", "*", "*", "*.parquet"))+")"); err != nil {
		t.Errorf("the archive's files: %v", err)
	}
}

// Beside an ingestor, serve's database reads and writes its staged files
// and nothing else; its settings stay the ingestor's to change.
func TestServeDatabaseLockedDown(t *testing.T) {
	cfg := serveConfig(t)
	srv, err := server.Start(context.Background(), cfg, mustSet(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	if srv.Store().StagedDir() == "" {
		t.Fatal("serve's store is not staged: this test wants the default")
	}
	if err := readerRun(t, srv.Store(), "SELECT * FROM read_text('/etc/hostname')"); err == nil || !strings.Contains(err.Error(), "disabled by configuration") {
		t.Errorf("read_text of a file beside serve's database: %v", err)
	}
	if err := readerRun(t, srv.Store(), "SELECT count(*) FROM slices"); err != nil {
		t.Errorf("a staged table: %v", err)
	}
	if err := readerRun(t, srv.Store(), "SET memory_limit = '1GB'"); err != nil {
		t.Errorf("SET memory_limit, as the ingestor does for large batches: %v", err)
	}
}
