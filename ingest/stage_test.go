package ingest_test

import (
	"context"
	"fmt"
	"math/big"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream/transport"
)

func openStaged(t *testing.T) *duck.Store {
	t.Helper()
	st, err := duck.Open(context.Background(), filepath.Join(t.TempDir(), "serve.duckdb"), duck.Options{Staged: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Once a run's table has CompactFiles small files, they become one, with
// the same rows.
func TestStagedFilesAreMerged(t *testing.T) {
	defer func(n int) { *ingest.CompactFiles = n }(*ingest.CompactFiles)
	*ingest.CompactFiles = 3
	p := startPipe(t)
	files, _ := filepath.Glob("../bench/sample/*.json.gz")
	st := openStaged(t)
	const copies = 4
	var sent int64
	for i := range copies { // one consumer a copy: a commit, so a file, a copy
		pub, err := transport.NewPublisher(p.nc, p.sc, transport.DefaultPublisher)
		if err != nil {
			t.Fatal(err)
		}
		sink := &ingest.PublishSink{P: pub, RunID: "live", Host: "node-1", Salt: fmt.Sprint("copy-", i)}
		if _, err := ingest.Read(context.Background(), sink, files, ingest.Options{RunID: "live", Host: "node-1", Rank: -1}); err != nil {
			t.Fatal(err)
		}
		if err := pub.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		before := sent
		sent += pub.Stats.Messages.Load()
		switch i {
		case 2:
			// the third copy's commit makes three files of each table, but
			// a query is reading the store: the merges wait, and the query
			// sees each row once
			r, err := st.NewReader(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			p.consume(t, st, func(s *ingest.IngestStats) bool {
				return before+s.Messages.Load() == sent && s.CompactionsDeferred.Load() >= 2
			})
			for _, tbl := range []string{"slices_core", "slices_detail"} {
				if got, want := readerCount(t, r, tbl), countRows(t, st, "SELECT count(*) FROM "+tbl); got != want {
					t.Errorf("%s: a reader saw %d rows, want %d", tbl, got, want)
				}
				if m, _ := filepath.Glob(filepath.Join(st.StagedDir(), tbl, "run=*", "m-*.parquet")); len(m) > 0 {
					t.Errorf("%s: merged %v while a reader was open", tbl, m)
				}
			}
			r.Close()
		case 3:
			// the reader is gone: the fourth copy's consumer merges all
			// four files of each staged table the copies write to
			var tables int64
			for _, tbl := range duck.StagedTables {
				if on, _ := filepath.Glob(filepath.Join(st.StagedDir(), tbl, "run=*", "*.parquet")); len(on) > 0 {
					tables++
				}
			}
			if tables < 3 {
				t.Fatalf("%d staged tables with files, want slices_core, slices_detail and stacks at least", tables)
			}
			p.consume(t, st, func(s *ingest.IngestStats) bool {
				return before+s.Messages.Load() == sent && s.Compactions.Load() == tables
			})
		default:
			p.consume(t, st, func(s *ingest.IngestStats) bool { return before+s.Messages.Load() == sent })
		}
	}
	offline := openStore(t)
	if _, err := ingest.Load(context.Background(), offline, files, ingest.Options{RunID: "live", Host: "node-1", Rank: -1}); err != nil {
		t.Fatal(err)
	}
	for _, tbl := range []string{"slices_core", "slices_detail", "stacks", "step_account"} {
		// the rows of four copies, whatever files they are in
		q := "SELECT count(*), sum(hash(s)::HUGEINT)::VARCHAR FROM " + tbl + " s"
		var n1, n2 int64
		var h1, h2 string
		if err := st.Conn().QueryRowContext(context.Background(), q).Scan(&n1, &h1); err != nil {
			t.Fatal(err)
		}
		if err := offline.Conn().QueryRowContext(context.Background(), q).Scan(&n2, &h2); err != nil {
			t.Fatal(err)
		}
		want, _ := new(big.Int).SetString(h2, 10)
		want.Mul(want, big.NewInt(copies))
		if n1 != copies*n2 || h1 != want.String() {
			t.Errorf("%s: %d rows (hash %s), want %d copies of %d (hash %s)", tbl, n1, h1, copies, n2, want)
		}
		// what is on disk is what staged_files records, merged
		on, _ := filepath.Glob(filepath.Join(st.StagedDir(), tbl, "run=*", "*"))
		var recorded []string
		rows, err := st.Query(context.Background(), "SELECT path FROM staged_files WHERE tbl = ? ORDER BY path", tbl)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var p string
			rows.Scan(&p)
			recorded = append(recorded, filepath.Join(st.StagedDir(), filepath.FromSlash(p)))
		}
		rows.Close()
		if fmt.Sprint(on) != fmt.Sprint(recorded) {
			t.Errorf("%s: on disk %v, recorded %v", tbl, on, recorded)
		}
		merged := 0
		for _, f := range on {
			if strings.HasPrefix(filepath.Base(f), "m-") {
				merged++
			}
		}
		if merged == 0 || len(on) >= *ingest.CompactFiles {
			t.Errorf("%s: %d files, %d merged: want the small ones merged", tbl, len(on), merged)
		}
	}
}

// readerCount counts the rows of table through r.
func readerCount(t *testing.T, r *duck.Reader, table string) int64 {
	t.Helper()
	rdr, err := r.QueryArrow(context.Background(), "SELECT count(*) FROM "+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatalf("count %s: %v", table, rdr.Err())
	}
	return rdr.RecordBatch().Column(0).(*array.Int64).Value(0)
}

func countRows(t *testing.T, st *duck.Store, q string) int64 {
	t.Helper()
	var n int64
	if err := st.Conn().QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
