package duck_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/trainscope/trainscope/sql/duck"
)

// longPlanning is a query whose cost is all in planning: DuckDB folds each
// constant expression while it prepares the statement, 20 strings of 20 MB
// built and measured one after the other (3 to 7 s a prepare on a loaded
// 2-core machine, some 60 MB at a time), and running it has nothing left
// to do.
func longPlanning() string {
	cols := make([]string, 20)
	for i := range cols {
		cols[i] = fmt.Sprintf("length(repeat('ab', %d)) AS c%d", 10_000_000+i, i)
	}
	return "SELECT " + strings.Join(cols, ", ")
}

// hangGuard fails the test when f has not returned long after any
// reasonable run: it catches a statement that was never interrupted, and
// nothing else (it measures no speed).
const hangGuard = 60 * time.Second

func streamAll(t *testing.T, r *duck.Reader, ctx context.Context, q string) (int64, error) {
	t.Helper()
	rdr, err := r.Stream(ctx, q, nil)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	var n int64
	for rdr.Next() {
		n += rdr.RecordBatch().NumRows()
	}
	return n, rdr.Err()
}

// A streaming result: DuckDB computes rows as they are read. Reading three
// batches of a billion-row query and releasing it stops the query; the
// rows past those were never built (a row 10M in would fail the query,
// and materializing the whole result first would hit it).
func TestStreamReadsAsItGoes(t *testing.T) {
	st := openForReaderTest(t, "")
	r := newReader(t, st)
	ctx := context.Background()
	t0 := time.Now()
	rdr, err := r.Stream(ctx, "SELECT CASE WHEN range < 10000000 THEN range ELSE error('built rows past the first 10M') END AS i FROM range(1000000000)", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for range 3 {
		if !rdr.Next() {
			t.Fatalf("the result ended early: %v", rdr.Err())
		}
		col := rdr.RecordBatch().Column(0).(*array.Int64)
		got = append(got, col.Int64Values()...)
	}
	rdr.Release()
	for i, v := range got {
		if v != int64(i) {
			t.Fatalf("row %d is %d", i, v)
		}
	}
	if took := time.Since(t0); took > hangGuard {
		t.Errorf("3 batches of a streaming result took %s: the query ran to its end", took)
	}
	// the Reader goes on: its next query runs, whole
	if n, err := streamAll(t, r, ctx, "SELECT range FROM range(100000)"); err != nil || n != 100000 {
		t.Errorf("next query on the reader: %d rows, %v", n, err)
	}
	// an error past the first batches comes from Err, once reached
	n, err := streamAll(t, r, ctx, "SELECT CASE WHEN range < 5000 THEN range ELSE error('boom at 5000') END FROM range(100000)")
	if err == nil || !strings.Contains(err.Error(), "boom at 5000") {
		t.Errorf("failing query: %d rows, %v", n, err)
	}
}

// Stream runs one statement: several are refused without running any, and
// allow sees DuckDB's statement type before anything runs.
func TestStreamRunsOnlyWhatItChecked(t *testing.T) {
	st := openForReaderTest(t, "")
	ctx := context.Background()
	if err := st.Exec(ctx, "CREATE TABLE probe (i BIGINT)"); err != nil {
		t.Fatal(err)
	}
	r := newReader(t, st)
	if _, err := r.Stream(ctx, "INSERT INTO probe VALUES (1); SELECT 1", nil); err == nil {
		t.Error("two statements: no error")
	}
	refused := errors.New("refused")
	var saw duckdb.StmtType
	_, err := r.Stream(ctx, "INSERT INTO probe VALUES (2)", func(typ duckdb.StmtType) error {
		saw = typ
		return refused
	})
	if !errors.Is(err, refused) || saw != duckdb.STATEMENT_TYPE_INSERT {
		t.Errorf("allow saw %v, Stream said %v", saw, err)
	}
	if n, err := streamAll(t, r, ctx, "SELECT * FROM probe"); err != nil || n != 0 {
		t.Errorf("probe holds %d rows (%v): a refused statement ran", n, err)
	}
	if _, err := r.Stream(ctx, "SELECT * FROM no_such_table", nil); err == nil || !strings.Contains(err.Error(), "no_such_table") {
		t.Errorf("unknown table: %v", err)
	}
}

// A context that ends interrupts DuckDB, in execution (a cross join of a
// trillion rows) and in planning (constant folding), and the error says
// the context ended; the Reader runs its next statement after either.
func TestStreamInterruptedAtDeadline(t *testing.T) {
	st := openForReaderTest(t, "")
	r := newReader(t, st)
	for name, q := range map[string]string{
		"execution": "SELECT count(*) FROM range(1000000) a, range(1000000) b",
		"planning":  longPlanning(),
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			t0 := time.Now()
			_, err := streamAll(t, r, ctx, q)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("past the deadline: %v, want context.DeadlineExceeded", err)
			}
			if took := time.Since(t0); took > hangGuard {
				t.Errorf("the query ran %s past a 200 ms deadline: it was not interrupted", took)
			}
			if n, err := streamAll(t, r, context.Background(), "SELECT 42"); err != nil || n != 1 {
				t.Errorf("next query: %d rows, %v", n, err)
			}
		})
	}
}

// StatementTypeContext plans within its context: a query whose planning
// takes seconds is interrupted at the deadline. StatementType, the driver's
// plain prepare, had no way to stop.
func TestStatementTypeContextInterrupted(t *testing.T) {
	st := openForReaderTest(t, "")
	r := newReader(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if _, err := r.StatementTypeContext(ctx, longPlanning()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past the deadline: %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(t0); took > hangGuard {
		t.Errorf("planning ran %s past a 200 ms deadline: it was not interrupted", took)
	}
	if typ, err := r.StatementTypeContext(context.Background(), "SELECT 1"); err != nil || typ != duckdb.STATEMENT_TYPE_SELECT {
		t.Errorf("next statement: %v, %v", typ, err)
	}
}

// Closing a Reader whose result is still open ends the query first.
func TestReaderCloseEndsOpenStream(t *testing.T) {
	st := openForReaderTest(t, "")
	r, err := st.NewReader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := r.Stream(context.Background(), "SELECT range FROM range(1000000000)", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatal(rdr.Err())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if rdr.Next() {
		t.Error("a result read on after its Reader closed")
	}
	rdr.Release()
}
