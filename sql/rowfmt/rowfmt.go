package rowfmt

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// WriteSQL prints every row of rows in format (table, csv or json).
func WriteSQL(rows *sql.Rows, format string, out io.Writer) error {
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	w := NewWriter(cols, format, out)
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := w.Row(vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// Writer prints rows of Go values (as database/sql scans them, or as
// ArrowValue converts them) as they come, in one of the formats: a result
// of 100M rows is never held. A table's column widths come from its first
// tableBlock rows; later rows keep them (a longer value overflows its
// column).
type Writer struct {
	cols   []string
	format string
	out    *bufio.Writer
	csv    *csv.Writer
	n      int
	block  [][]string // table rows waiting for the widths
	widths []int      // table column widths, once known
}

const tableBlock = 1000

// NewWriter starts printing rows with columns cols in format (table, csv
// or json) to out; Close ends it.
func NewWriter(cols []string, format string, out io.Writer) *Writer {
	w := &Writer{cols: cols, format: format, out: bufio.NewWriterSize(out, 64<<10)}
	switch format {
	case "csv":
		w.csv = csv.NewWriter(w.out)
		w.csv.Write(cols)
	case "json":
		w.out.WriteString("[")
	}
	return w
}

// Row prints one row of Go values, one per column.
func (w *Writer) Row(r []any) error {
	w.n++
	switch w.format {
	case "json":
		o := make(map[string]any, len(w.cols))
		for i, c := range w.cols {
			o[c] = jsonValue(r[i])
		}
		b, err := json.MarshalIndent(o, "  ", "  ")
		if err != nil {
			return err
		}
		if w.n > 1 {
			w.out.WriteString(",")
		}
		w.out.WriteString("\n  ")
		w.out.Write(b)
	case "csv":
		line := make([]string, len(r))
		for i, v := range r {
			line[i] = text(v)
		}
		w.csv.Write(line)
	default:
		line := make([]string, len(r))
		for i, v := range r {
			line[i] = text(v)
			if len(line[i]) > 100 {
				line[i] = line[i][:99] + "…"
			}
			line[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(line[i])
		}
		if w.widths == nil {
			w.block = append(w.block, line)
			if len(w.block) == tableBlock {
				w.flushBlock()
			}
			return nil
		}
		w.tableLine(line)
	}
	if w.n%tableBlock == 0 {
		return w.out.Flush()
	}
	return nil
}

// flushBlock fixes the table's widths from the header and the rows so
// far, the way text/tabwriter aligns them, and prints them.
func (w *Writer) flushBlock() {
	w.widths = make([]int, len(w.cols))
	for _, line := range append([][]string{w.cols}, w.block...) {
		for i, c := range line {
			w.widths[i] = max(w.widths[i], utf8.RuneCountInString(c))
		}
	}
	w.tableLine(w.cols)
	for _, line := range w.block {
		w.tableLine(line)
	}
	w.block = nil
}

func (w *Writer) tableLine(line []string) {
	for i, c := range line {
		w.out.WriteString(c)
		if i < len(line)-1 {
			w.out.WriteString(strings.Repeat(" ", max(w.widths[i]-utf8.RuneCountInString(c), 0)+2))
		}
	}
	w.out.WriteString("\n")
}

// Close prints what is left (a short table, its row count, the closing
// bracket) and flushes.
func (w *Writer) Close() error {
	switch w.format {
	case "json":
		if w.n > 0 {
			w.out.WriteString("\n")
		}
		w.out.WriteString("]\n")
	case "csv":
		w.csv.Flush()
		if err := w.csv.Error(); err != nil {
			return err
		}
	default:
		if w.widths == nil {
			w.flushBlock()
		}
		fmt.Fprintf(w.out, "(%d rows)\n", w.n)
	}
	return w.out.Flush()
}

func text(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []byte:
		return string(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	if b, err := json.Marshal(jsonValue(v)); err == nil && !isScalarString(v) {
		return string(b)
	}
	return fmt.Sprint(v)
}

func isScalarString(v any) bool {
	_, ok := v.(string)
	return ok
}

func jsonValue(v any) any {
	switch x := v.(type) {
	case *big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
		return x.String()
	case []byte:
		return string(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	}
	return v
}

// ArrowValue is the Go value database/sql would give for one Arrow cell:
// integers, floats, strings, time.Time, slices for lists, maps for structs
// and maps. Strings and bytes are copied, as Arrow's alias the batch.
func ArrowValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch c := a.(type) {
	case *array.Boolean:
		return c.Value(i)
	case *array.Int8:
		return int64(c.Value(i))
	case *array.Int16:
		return int64(c.Value(i))
	case *array.Int32:
		return int64(c.Value(i))
	case *array.Int64:
		return c.Value(i)
	case *array.Uint8:
		return uint64(c.Value(i))
	case *array.Uint16:
		return uint64(c.Value(i))
	case *array.Uint32:
		return uint64(c.Value(i))
	case *array.Uint64:
		return c.Value(i)
	case *array.Float32:
		return float64(c.Value(i))
	case *array.Float64:
		return c.Value(i)
	case *array.String:
		return strings.Clone(c.Value(i))
	case *array.LargeString:
		return strings.Clone(c.Value(i))
	case *array.StringView:
		return strings.Clone(c.Value(i))
	case *array.Binary:
		return bytes.Clone(c.Value(i))
	case *array.LargeBinary:
		return bytes.Clone(c.Value(i))
	case *array.Timestamp:
		return c.Value(i).ToTime(c.DataType().(*arrow.TimestampType).Unit)
	case *array.Date32:
		return c.Value(i).ToTime()
	case *array.Date64:
		return c.Value(i).ToTime()
	case *array.Decimal128:
		// HUGEINT arrives as decimal(38, 0): keep it exact.
		if scale := c.DataType().(*arrow.Decimal128Type).Scale; scale != 0 {
			return c.Value(i).ToFloat64(scale)
		}
		return c.Value(i).BigInt()
	case *array.MonthDayNanoInterval:
		// The shape database/sql gives DuckDB's INTERVAL.
		v := c.Value(i)
		return map[string]any{"months": v.Months, "days": v.Days, "micros": v.Nanoseconds / 1000}
	case *array.Dictionary:
		return ArrowValue(c.Dictionary(), c.GetValueIndex(i))
	case *array.Struct:
		st := c.DataType().(*arrow.StructType)
		m := make(map[string]any, c.NumField())
		for f := 0; f < c.NumField(); f++ {
			m[st.Field(f).Name] = ArrowValue(c.Field(f), i)
		}
		return m
	case *array.Map:
		start, end := c.ValueOffsets(i)
		m := make(map[string]any, end-start)
		for j := start; j < end; j++ {
			m[text(ArrowValue(c.Keys(), int(j)))] = ArrowValue(c.Items(), int(j))
		}
		return m
	case array.ListLike:
		start, end := c.ValueOffsets(i)
		l := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			l = append(l, ArrowValue(c.ListValues(), int(j)))
		}
		return l
	case array.ExtensionArray:
		// DuckDB's own types (BIGNUM, ...) arrive as Arrow extensions:
		// their text if the extension gives one, else their storage
		if s, ok := valueStr(a, i); ok {
			return s
		}
		v := ArrowValue(c.Storage(), i)
		if b, ok := v.([]byte); ok {
			// bytes in the extension's own encoding: show them, named
			return fmt.Sprintf("%s:0x%x", c.ExtensionType().ExtensionName(), b)
		}
		return v
	}
	if s, ok := valueStr(a, i); ok {
		return s
	}
	return fmt.Sprintf("<%s>", a.DataType())
}

// valueStr is Arrow's text of a value, which some array types do not
// implement (they panic: "ValueStr wasn't implemented").
func valueStr(a arrow.Array, i int) (s string, ok bool) {
	defer func() {
		if recover() != nil {
			s, ok = "", false
		}
	}()
	return strings.Clone(a.ValueStr(i)), true
}
