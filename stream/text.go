package stream

import (
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TextRepair counts the values of one column whose invalid UTF-8 was
// replaced, with the first of them as it became.
type TextRepair struct {
	Column string
	Values int
	First  string
}

// RepairText returns rec with every string that is not valid UTF-8 (in
// plain, dictionary and list-of-string columns) made valid by replacing
// each bad byte sequence with U+FFFD, and what it replaced. DuckDB refuses
// invalid UTF-8, so a batch holding it can never be stored; traces are
// written by C++ profilers that copy names byte for byte, so it happens.
// When nothing needs repair rec itself is returned (retained): the caller
// releases the result either way.
func RepairText(rec arrow.RecordBatch) (arrow.RecordBatch, []TextRepair) {
	var repairs []TextRepair
	var cols []arrow.Array
	for i, col := range rec.Columns() {
		fixed, n, first := repairArray(col)
		if n == 0 {
			continue
		}
		if cols == nil {
			cols = make([]arrow.Array, rec.NumCols())
		}
		cols[i] = fixed
		repairs = append(repairs, TextRepair{Column: rec.ColumnName(i), Values: n, First: clip(first)})
	}
	if cols == nil {
		rec.Retain()
		return rec, nil
	}
	for i, col := range rec.Columns() {
		if cols[i] == nil {
			col.Retain()
			cols[i] = col
		}
	}
	return newRecord(rec.Schema(), cols, int(rec.NumRows())), repairs
}

// repairArray returns a repaired copy of a (nil when nothing is wrong),
// how many values it changed and the first of them.
func repairArray(a arrow.Array) (arrow.Array, int, string) {
	switch a := a.(type) {
	case *array.String:
		n, first := 0, ""
		for i := range a.Len() {
			if a.IsValid(i) && !utf8.ValidString(a.Value(i)) {
				if n == 0 {
					first = strings.ToValidUTF8(a.Value(i), "\uFFFD")
				}
				n++
			}
		}
		if n == 0 {
			return nil, 0, ""
		}
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.Reserve(a.Len())
		for i := range a.Len() {
			if a.IsNull(i) {
				b.AppendNull()
			} else {
				b.Append(strings.ToValidUTF8(a.Value(i), "\uFFFD"))
			}
		}
		return b.NewArray(), n, first
	case *array.Dictionary:
		dict, n, first := repairArray(a.Dictionary())
		if n == 0 {
			return nil, 0, ""
		}
		defer dict.Release()
		return array.NewDictionaryArray(a.DataType(), a.Indices(), dict), n, first
	case *array.List:
		values, n, first := repairArray(a.ListValues())
		if n == 0 {
			return nil, 0, ""
		}
		defer values.Release()
		d := a.Data()
		data := array.NewData(d.DataType(), d.Len(), d.Buffers(), []arrow.ArrayData{values.Data()}, d.NullN(), d.Offset())
		defer data.Release()
		return array.MakeFromData(data), n, first
	}
	return nil, 0, ""
}
