package duck_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/trainscope/trainscope/sql/duck"
)

func openForReaderTest(t *testing.T, path string) *duck.Store {
	t.Helper()
	st, err := duck.Open(context.Background(), path, duck.Options{Threads: 2})
	if err != nil {
		t.Fatalf("open %q: %v", path, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newReader(t *testing.T, st *duck.Store) *duck.Reader {
	t.Helper()
	r, err := st.NewReader(context.Background())
	if err != nil {
		t.Fatalf("new reader: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("close reader: %v", err)
		}
	})
	return r
}

// readInts runs a query whose columns are all BIGINT and returns its rows.
func readInts(t *testing.T, r *duck.Reader, q string) [][]int64 {
	t.Helper()
	rdr, err := r.QueryArrow(context.Background(), q)
	if err != nil {
		t.Fatalf("reader query %q: %v", q, err)
	}
	defer rdr.Release()
	var out [][]int64
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]int64, rec.NumCols())
			for c := range row {
				row[c] = rec.Column(c).(*array.Int64).Value(i)
			}
			out = append(out, row)
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatalf("reader query %q: %v", q, err)
	}
	return out
}

// TestReaderSeesCommittedRowsWhileWriting inserts rows one statement at a
// time on the store's connection while a Reader on another goroutine keeps
// counting them: every count it sees is a consistent snapshot (count equals
// the largest value, as rows arrive in order), counts never go back, and
// once the writer is done the reader sees every row.
func TestReaderSeesCommittedRowsWhileWriting(t *testing.T) {
	for name, path := range map[string]string{
		"memory": "",
		"file":   filepath.Join(t.TempDir(), "r.duckdb"),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := openForReaderTest(t, path)
			if err := st.Exec(ctx, "CREATE TABLE reader_probe (i BIGINT)"); err != nil {
				t.Fatal(err)
			}
			r := newReader(t, st)

			const n = 300
			done := make(chan error, 1)
			go func() { // the writer: the only goroutine that uses st from here on
				for i := 1; i <= n; i++ {
					if err := st.Exec(ctx, "INSERT INTO reader_probe VALUES (?)", int64(i)); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()

			var last int64
			reads := 0
			for writing := true; writing; {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("writer: %v", err)
					}
					writing = false
				default:
				}
				got := readInts(t, r, "SELECT count(*)::BIGINT, coalesce(max(i), 0)::BIGINT FROM reader_probe")
				count, max := got[0][0], got[0][1]
				if count != max {
					t.Fatalf("snapshot not consistent: count %d, max %d", count, max)
				}
				if count < last {
					t.Fatalf("count went back from %d to %d", last, count)
				}
				last = count
				reads++
			}
			got := readInts(t, r, "SELECT count(*)::BIGINT, coalesce(sum(i), 0)::BIGINT FROM reader_probe")
			if got[0][0] != n || got[0][1] != n*(n+1)/2 {
				t.Fatalf("after the writer: %v, want [%d %d]", got[0], n, n*(n+1)/2)
			}
			t.Logf("%d reads while writing", reads)
		})
	}
}

// TestReaderSnapshot: a query's result is the snapshot taken when it ran,
// whatever the writer commits while the caller is still reading it.
func TestReaderSnapshot(t *testing.T) {
	ctx := context.Background()
	st := openForReaderTest(t, "")
	if err := st.Exec(ctx, "CREATE TABLE reader_probe AS SELECT range::BIGINT AS i FROM range(5000)"); err != nil {
		t.Fatal(err)
	}
	r := newReader(t, st)
	rdr, err := r.QueryArrow(ctx, "SELECT i FROM reader_probe")
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	rows := 0
	for rdr.Next() {
		rows += int(rdr.RecordBatch().NumRows())
		// The store's goroutine is this one; the reader is mid-stream.
		if err := st.Exec(ctx, "INSERT INTO reader_probe SELECT range + 5000 FROM range(1000)"); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	if rows != 5000 {
		t.Errorf("reader saw %d rows, want the 5000 of its snapshot", rows)
	}
	if got := readInts(t, r, "SELECT count(*)::BIGINT FROM reader_probe"); got[0][0] <= 5000 {
		t.Errorf("a new query sees %d rows, want the committed inserts too", got[0][0])
	}
}

func TestReaderStatementType(t *testing.T) {
	ctx := context.Background()
	st := openForReaderTest(t, "")
	if err := st.Exec(ctx, "CREATE TABLE reader_probe (i BIGINT)"); err != nil {
		t.Fatal(err)
	}
	r := newReader(t, st)
	for q, want := range map[string]duckdb.StmtType{
		"SELECT 1":                            duckdb.STATEMENT_TYPE_SELECT,
		"FROM reader_probe":                   duckdb.STATEMENT_TYPE_SELECT,
		"DESCRIBE reader_probe":               duckdb.STATEMENT_TYPE_SELECT,
		"EXPLAIN SELECT 1":                    duckdb.STATEMENT_TYPE_EXPLAIN,
		"INSERT INTO reader_probe VALUES (1)": duckdb.STATEMENT_TYPE_INSERT,
	} {
		got, err := r.StatementType(q)
		if err != nil || got != want {
			t.Errorf("StatementType(%q) = %v, %v; want %v", q, got, err, want)
		}
	}
	// More than one statement is refused, and the first is not run.
	if _, err := r.StatementType("INSERT INTO reader_probe VALUES (7); SELECT 1"); err == nil {
		t.Error("two statements: want an error")
	}
	if got := readInts(t, r, "SELECT count(*)::BIGINT FROM reader_probe"); got[0][0] != 0 {
		t.Errorf("preparing ran the INSERT: %d rows", got[0][0])
	}
}

func TestReaderClosedStore(t *testing.T) {
	st, err := duck.Open(context.Background(), "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.NewReader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	st.Close()
}
