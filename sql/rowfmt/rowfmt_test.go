package rowfmt

import (
	"bytes"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func write(t *testing.T, format string, cols []string, rows ...[]any) string {
	t.Helper()
	var b bytes.Buffer
	w := NewWriter(cols, format, &b)
	for _, r := range rows {
		if err := w.Row(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestFormats(t *testing.T) {
	cols := []string{"name", "n", "tags"}
	rows := [][]any{
		{"ampere_sgemm", big.NewInt(12), []any{"gemm", []byte("fp32")}},
		{"a,b \"quoted\"", 2.5, nil},
	}
	for _, c := range []struct{ format, want string }{
		// widths: 12 (both names), 3 ("2.5"), then two spaces between columns
		{"table", "name          n    tags\nampere_sgemm  12   [\"gemm\",\"fp32\"]\na,b \"quoted\"  2.5  NULL\n(2 rows)\n"},
		{"csv", "name,n,tags\nampere_sgemm,12,\"[\"\"gemm\"\",\"\"fp32\"\"]\"\n\"a,b \"\"quoted\"\"\",2.5,NULL\n"},
		{"json", "[\n  {\n    \"n\": 12,\n    \"name\": \"ampere_sgemm\",\n    \"tags\": [\n      \"gemm\",\n      \"fp32\"\n    ]\n  },\n  {\n    \"n\": 2.5,\n    \"name\": \"a,b \\\"quoted\\\"\",\n    \"tags\": null\n  }\n]\n"},
		{"json-empty", "[]\n"},
	} {
		t.Run(c.format, func(t *testing.T) {
			format, in := c.format, rows
			if format == "json-empty" {
				format, in = "json", nil
			}
			if got := write(t, format, cols, in...); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// A table's widths come from its first block of rows; a later, longer
// value overflows its column instead of holding every row back. Cells are
// cut at 100 characters and tabs and newlines become spaces.
func TestTableStreams(t *testing.T) {
	var rows [][]any
	for i := range tableBlock {
		rows = append(rows, []any{fmt.Sprint(i), "x"})
	}
	rows = append(rows, []any{strings.Repeat("w", 20), "after"}, []any{"tab\there\nline", strings.Repeat("z", 150)})
	out := write(t, "table", []string{"k", "v"}, rows...)
	lines := strings.Split(out, "\n")
	// the first block's widest key is "999": three characters and two spaces
	if lines[0] != "k    v" || lines[1] != "0    x" {
		t.Errorf("header and first row: %q %q", lines[0], lines[1])
	}
	if got := lines[tableBlock+1]; got != strings.Repeat("w", 20)+"  after" {
		t.Errorf("an overflowing row: %q", got)
	}
	if got := lines[tableBlock+2]; got != "tab here line  "+strings.Repeat("z", 99)+"…" {
		t.Errorf("a cut row: %q", got)
	}
	if !strings.HasSuffix(out, fmt.Sprintf("(%d rows)\n", tableBlock+2)) {
		t.Errorf("no row count")
	}
}

func TestArrowValue(t *testing.T) {
	mem := memory.NewGoAllocator()
	build := func(dt arrow.DataType, fill func(array.Builder)) arrow.Array {
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		fill(b)
		return b.NewArray()
	}
	ts := time.Date(2026, 11, 24, 10, 0, 0, 123000, time.UTC)
	dict := build(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, func(b array.Builder) {
		b.(*array.BinaryDictionaryBuilder).AppendString("nccl:all_reduce")
	})
	list := build(arrow.ListOf(arrow.PrimitiveTypes.Int64), func(b array.Builder) {
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int64Builder).AppendValues([]int64{4, 8}, nil)
	})
	st := build(arrow.StructOf(arrow.Field{Name: "rank", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "host", Type: arrow.BinaryTypes.String}), func(b array.Builder) {
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(3)
		sb.FieldBuilder(1).(*array.StringBuilder).Append("node-a")
	})
	huge := build(&arrow.Decimal128Type{Precision: 38, Scale: 0}, func(b array.Builder) {
		b.(*array.Decimal128Builder).Append(decimal128.FromI64(-7))
	})
	scaled := build(&arrow.Decimal128Type{Precision: 10, Scale: 2}, func(b array.Builder) {
		b.(*array.Decimal128Builder).Append(decimal128.FromI64(1234))
	})
	stamp := build(&arrow.TimestampType{Unit: arrow.Microsecond}, func(b array.Builder) {
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro()))
	})
	nulls := build(arrow.PrimitiveTypes.Float64, func(b array.Builder) { b.AppendNull() })
	for _, c := range []struct {
		name string
		a    arrow.Array
		want string
	}{
		{"dictionary", dict, "nccl:all_reduce"},
		{"list", list, "[4 8]"},
		{"struct", st, "map[host:node-a rank:3]"},
		{"hugeint", huge, "-7"},
		{"decimal", scaled, "12.34"},
		{"timestamp", stamp, ts.String()},
		{"null", nulls, "<nil>"},
	} {
		if got := fmt.Sprint(ArrowValue(c.a, 0)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
		c.a.Release()
	}
}
