package stream

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// MaxTextBytes bounds one string value of any column: a longer one is cut
// (readers cut names sooner; this is the bound for everything else).
const MaxTextBytes = 1 << 20

// TextRepair counts the values of one column that were repaired: invalid
// UTF-8 replaced by U+FFFD, or cut to MaxTextBytes; First is the first of
// them as it became (clipped).
type TextRepair struct {
	Column       string
	Invalid, Cut int
	First        string
}

// RepairText returns rec with every string that is not valid UTF-8 (in
// plain, dictionary and list-of-string columns) made valid by replacing
// each bad byte sequence with U+FFFD, every string longer than
// MaxTextBytes cut, and what it changed. DuckDB refuses invalid UTF-8, so a
// batch holding it can never be stored; traces are written by C++
// profilers that copy names byte for byte, so it happens.
// When nothing needs repair rec itself is returned (retained): the caller
// releases the result either way.
func RepairText(rec arrow.RecordBatch) (arrow.RecordBatch, []TextRepair) {
	var repairs []TextRepair
	var cols []arrow.Array
	for i, col := range rec.Columns() {
		fixed, r := repairArray(col)
		if fixed == nil {
			continue
		}
		if cols == nil {
			cols = make([]arrow.Array, rec.NumCols())
		}
		cols[i] = fixed
		r.Column, r.First = rec.ColumnName(i), Clip(r.First)
		repairs = append(repairs, r)
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
	return NewRecord(rec.Schema(), cols, int(rec.NumRows())), repairs
}

// repairArray returns a repaired copy of a (nil when nothing is wrong)
// and what it changed.
func repairArray(a arrow.Array) (arrow.Array, TextRepair) {
	var r TextRepair
	switch a := a.(type) {
	case *array.String:
		for i := range a.Len() {
			if a.IsNull(i) {
				continue
			}
			v := a.Value(i)
			bad, long := !utf8.ValidString(v), len(v) > MaxTextBytes
			if bad || long {
				if r.Invalid+r.Cut == 0 {
					r.First = fixText(v)
				}
				if bad {
					r.Invalid++
				} else {
					r.Cut++
				}
			}
		}
		if r.Invalid+r.Cut == 0 {
			return nil, r
		}
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.Reserve(a.Len())
		for i := range a.Len() {
			if a.IsNull(i) {
				b.AppendNull()
			} else {
				b.Append(fixText(a.Value(i)))
			}
		}
		return b.NewArray(), r
	case *array.Dictionary:
		dict, r := repairArray(a.Dictionary())
		if dict == nil {
			return nil, r
		}
		defer dict.Release()
		return array.NewDictionaryArray(a.DataType(), a.Indices(), dict), r
	case *array.List:
		values, r := repairArray(a.ListValues())
		if values == nil {
			return nil, r
		}
		defer values.Release()
		d := a.Data()
		data := array.NewData(d.DataType(), d.Len(), d.Buffers(), []arrow.ArrayData{values.Data()}, d.NullN(), d.Offset())
		defer data.Release()
		return array.MakeFromData(data), r
	}
	return nil, r
}

// fixText makes v valid UTF-8 and at most MaxTextBytes long.
func fixText(v string) string {
	v = strings.ToValidUTF8(v, "\uFFFD")
	if len(v) <= MaxTextBytes {
		return v
	}
	cut := MaxTextBytes
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + fmt.Sprintf("…[%d more bytes cut]", len(v)-cut)
}

// Clip cuts s to 64 bytes for quoting in an error message.
func Clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
