package duck_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// smallRecord is n rows of every column type a small insert appends:
// plain and dictionary strings, integers, doubles and booleans, each
// column null in every third row; row r's l is r << 33 (past an INTEGER).
func smallRecord(n int) arrow.RecordBatch {
	fields := []arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: stream.DictString, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "l", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for r := range n {
		if r%3 == 2 {
			for _, f := range b.Fields() {
				f.AppendNull()
			}
			continue
		}
		b.Field(0).(*array.StringBuilder).Append("s" + strings.Repeat("x", r%4))
		b.Field(1).(*array.BinaryDictionaryBuilder).AppendString("d" + string(rune('a'+r%2)))
		b.Field(2).(*array.Int32Builder).Append(int32(r))
		b.Field(3).(*array.Int64Builder).Append(int64(r) << 33)
		b.Field(4).(*array.Float64Builder).Append(float64(r) / 4)
		b.Field(5).(*array.BooleanBuilder).Append(r%2 == 0)
		b.Field(6).(*array.Uint64Builder).Append(uint64(r) << 62)
	}
	return b.NewRecordBatch()
}

func TestInsertSmall(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, iType string
		rows        int
		appended    int64 // inserts the appender takes
	}{
		{"appended", "INTEGER", 10, 1},
		// a VARCHAR column for an Int32 field: the appender refuses the
		// value, and the rows go the other way, cast, once
		{"fallback", "VARCHAR", 10, 0},
		{"streamed", "INTEGER", 20_000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := duck.Open(ctx, "", duck.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			// columns in another order, and one the batches lack
			mustExec(t, st, "CREATE TABLE small (extra VARCHAR DEFAULT 'def', u UBIGINT, b BOOLEAN, f DOUBLE, l BIGINT, i "+tc.iType+", d VARCHAR, s VARCHAR)")
			rec := smallRecord(tc.rows)
			defer rec.Release()
			before := duck.Appends()
			if err := st.InsertAll(ctx, "small", []arrow.RecordBatch{rec, rec}); err != nil {
				t.Fatal(err)
			}
			if got := duck.Appends() - before; got != tc.appended {
				t.Errorf("%d inserts appended, want %d", got, tc.appended)
			}
			if n := queryInt(t, st, "SELECT count(*) FROM small"); n != int64(2*tc.rows) {
				t.Fatalf("%d rows, want %d", n, 2*tc.rows)
			}
			want := []string{"def|0|true|0.0|0|0|da|s", "def|4611686018427387904|false|0.25|8589934592|1|db|sx", "def|NULL|NULL|NULL|NULL|NULL|NULL|NULL"}
			got := rowStrings(t, st, "SELECT extra, coalesce(u::VARCHAR, 'NULL'), coalesce(b::VARCHAR, 'NULL'), coalesce(f::VARCHAR, 'NULL'), coalesce(l::VARCHAR, 'NULL'), coalesce(i::VARCHAR, 'NULL'), coalesce(d, 'NULL'), coalesce(s, 'NULL') FROM small LIMIT 3")
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}

	// appended rows belong to the transaction: rolled back with it
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mustExec(t, st, "CREATE TABLE small (s VARCHAR, d VARCHAR, i INTEGER, l BIGINT, f DOUBLE, b BOOLEAN NOT NULL, u UBIGINT)")
	rec := smallRecord(4)
	defer rec.Release()
	boom := errors.New("boom")
	if err := st.Tx(ctx, func() error {
		if err := st.InsertAll(ctx, "small", []arrow.RecordBatch{rec.NewSlice(0, 2)}); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("transaction: %v", err)
	}
	if n := queryInt(t, st, "SELECT count(*) FROM small"); n != 0 {
		t.Errorf("%d rows after the rollback, want 0", n)
	}
	// a constraint the rows break is an error, naming the table
	if err := st.InsertAll(ctx, "small", []arrow.RecordBatch{rec}); err == nil || !strings.Contains(err.Error(), "small") {
		t.Errorf("a null into a NOT NULL column: %v", err)
	}
	if n := queryInt(t, st, "SELECT count(*) FROM small"); n != 0 {
		t.Errorf("%d rows after a refused insert, want 0", n)
	}
}
