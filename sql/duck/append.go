package duck

import (
	"context"
	"database/sql/driver"
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	duckdb "github.com/duckdb/duckdb-go/v2"
)

// appendMaxRows is the most rows InsertAll appends through DuckDB's
// appender rather than a registered Arrow stream. Per value the appender
// costs about what the stream does (a throwaway probe: 15 ranks' stacks,
// 7,860 rows, 5.1 against 4.2-5.2 ms), but it plans no statement and runs
// no parallel scan: a small table costs 0.5 ms instead of 2-2.5 ms alone,
// and much more than that beside the ingestor's other work (stacks, on
// bench/tmp/r64 x 16 drained: 23 ms a commit). Larger inserts keep the
// stream, which DuckDB reads on every core.
const appendMaxRows = 16384

// appends counts the inserts the appender took (the tests read it).
var appends atomic.Int64

// appendable says whether every column of sc is of a type appendRecords
// converts.
func appendable(sc *arrow.Schema) bool {
	for _, f := range sc.Fields() {
		switch t := f.Type.(type) {
		case *arrow.StringType, *arrow.Int32Type, *arrow.Int64Type, *arrow.Uint64Type, *arrow.Float64Type, *arrow.BooleanType:
		case *arrow.DictionaryType:
			if t.ValueType.ID() != arrow.STRING {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// appendRecords appends the rows of recs to table through DuckDB's
// appender, by column name: a statement's planning, an Arrow stream's
// registration and a parallel scan cost milliseconds, which a commit of
// many small traces pays for each of its small tables. The caller checks
// appendable and the row count. Unless it reports them appended, no row
// was (the appender could not be made for the table, or a value did not
// convert to its column's type): the caller inserts them the other way,
// which says what is wrong, if anything.
func (s *Store) appendRecords(ctx context.Context, table string, recs []arrow.RecordBatch) (appended bool, err error) {
	sc := recs[0].Schema()
	cols := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		cols[i] = f.Name
	}
	err = s.conn.Raw(func(dc any) error {
		conn, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("append: %T is not a driver connection", dc)
		}
		a, err := duckdb.NewAppenderWithColumns(conn, "", "", table, cols)
		if err != nil {
			return err
		}
		row := make([]driver.Value, len(cols))
		for _, rec := range recs {
			for i := range int(rec.NumRows()) {
				for c, col := range rec.Columns() {
					row[c] = value(col, i)
				}
				if err := a.AppendRow(row...); err != nil {
					// nothing reached the table: the rows are in the
					// appender until it is closed
					a.Clear()
					a.Close()
					return err
				}
			}
		}
		appended = true
		if err := a.CloseWithCancel(ctx); err != nil {
			return err
		}
		appends.Add(1)
		return nil
	})
	return appended, err
}

// value is row i of col, of a type appendable allows, as the appender
// takes it.
func value(col arrow.Array, i int) driver.Value {
	if col.IsNull(i) {
		return nil
	}
	switch c := col.(type) {
	case *array.String:
		return c.Value(i)
	case *array.Int32:
		return c.Value(i)
	case *array.Int64:
		return c.Value(i)
	case *array.Uint64:
		return c.Value(i)
	case *array.Float64:
		return c.Value(i)
	case *array.Boolean:
		return c.Value(i)
	case *array.Dictionary:
		return c.Dictionary().(*array.String).Value(c.GetValueIndex(i))
	}
	panic(fmt.Sprintf("append: column of type %s", col.DataType()))
}
