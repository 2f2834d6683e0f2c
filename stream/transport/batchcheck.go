package transport

import (
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/trainscope/trainscope/stream"
)

// CheckBatch verifies a decoded batch of table: the table's columns in
// order, and every column's contents: string offsets inside their data,
// dictionary indices inside their dictionary, valid UTF-8, no nulls where
// the schema has none, one run per batch, and values in the ranges the
// readers produce (stream.CheckRanges: timestamps and durations within
// stream.MinTimeNS, stream.MaxTimeNS and stream.MaxDurNS, ranks, steps and
// durations not negative, memory sizes from 0 to stream.MaxMemBytes). A
// batch that fails would fail in DuckDB or in a detector later, or be
// stored as nonsense; the consumer rejects it.
func CheckBatch(table string, rec arrow.RecordBatch) error {
	if err := stream.CheckSchema(table, rec.Schema()); err != nil {
		return err
	}
	want := stream.Tables[table]
	for i, col := range rec.Columns() {
		f := want.Field(i)
		if int64(col.Len()) != rec.NumRows() {
			return fmt.Errorf("table %s: column %s has %d rows, the batch %d", table, f.Name, col.Len(), rec.NumRows())
		}
		if !f.Nullable && col.NullN() > 0 {
			return fmt.Errorf("table %s: column %s has %d nulls; it has none by definition", table, f.Name, col.NullN())
		}
		if err := checkArray(col.Data()); err != nil {
			return fmt.Errorf("table %s: column %s: %w", table, f.Name, err)
		}
	}
	if err := stream.CheckRanges(table, rec); err != nil {
		return err
	}
	if _, err := batchRun(rec); err != nil {
		return fmt.Errorf("table %s: %w", table, err)
	}
	return nil
}

// checkArray verifies an array's offsets, indices and text on its raw
// buffers: Arrow panics when it makes an array (or a dictionary's values)
// from offsets that point past the data, and its own ValidateFull slices a
// value before it has checked the offset.
func checkArray(d arrow.ArrayData) error {
	valid := func(i int) bool {
		bufs := d.Buffers()
		if d.NullN() == 0 || len(bufs) == 0 || bufs[0] == nil {
			return true
		}
		return bitutil.BitIsSet(bufs[0].Bytes(), d.Offset()+i)
	}
	switch d.DataType().ID() {
	case arrow.STRING:
		var chars []byte
		if bufs := d.Buffers(); len(bufs) > 2 && bufs[2] != nil {
			chars = bufs[2].Bytes()
		}
		offs, err := checkOffsets(d, len(chars))
		if err != nil {
			return err
		}
		if d.NullN() == 0 && validStrings(chars, offs) {
			return nil
		}
		for i := range d.Len() {
			if valid(i) && !utf8.Valid(chars[offs[i]:offs[i+1]]) {
				return fmt.Errorf("row %d: invalid UTF-8 %q", i, stream.Clip(string(chars[offs[i]:offs[i+1]])))
			}
		}
	case arrow.DICTIONARY:
		dict := d.Dictionary()
		if dict == nil {
			return fmt.Errorf("a dictionary column without its dictionary")
		}
		if err := checkArray(dict); err != nil {
			return fmt.Errorf("dictionary: %w", err)
		}
		if d.DataType().(*arrow.DictionaryType).IndexType.ID() != arrow.INT32 || len(d.Buffers()) < 2 || d.Buffers()[1] == nil && d.Len() > 0 {
			return fmt.Errorf("dictionary indices are not int32")
		}
		if d.Len() == 0 {
			return nil
		}
		idx := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())
		if len(idx) < d.Offset()+d.Len() {
			return fmt.Errorf("%d dictionary indices for %d rows", len(idx)-d.Offset(), d.Len())
		}
		n := int32(dict.Len())
		for i, v := range idx[d.Offset() : d.Offset()+d.Len()] {
			if (v < 0 || v >= n) && valid(i) {
				return fmt.Errorf("row %d: dictionary index %d, the dictionary has %d entries", i, v, n)
			}
		}
	case arrow.LIST:
		if len(d.Children()) != 1 {
			return fmt.Errorf("a list with %d children", len(d.Children()))
		}
		child := d.Children()[0]
		if _, err := checkOffsets(d, child.Len()); err != nil {
			return err
		}
		return checkArray(child)
	}
	return nil
}

// validStrings says whether every string of chars between offsets offs
// (checked: ascending, within chars) is valid UTF-8, in one pass over
// their bytes: they are if those bytes are, and no string but at their
// end starts inside a character (on a continuation byte). A row at a time,
// the check was a third of the ingestor's decoding (bench/tmp/r64 x 16).
func validStrings(chars []byte, offs []int32) bool {
	if len(offs) < 2 {
		return true
	}
	lo, hi := offs[0], offs[len(offs)-1]
	if !utf8.Valid(chars[lo:hi]) {
		return false
	}
	for _, o := range offs[1 : len(offs)-1] {
		if o < hi && chars[o]&0xC0 == 0x80 {
			return false
		}
	}
	return true
}

// checkOffsets verifies the int32 offsets of a string or list array:
// enough of them, starting at or after 0, never decreasing, ending inside
// the n values they index. It returns them (one more than the rows).
func checkOffsets(d arrow.ArrayData, n int) ([]int32, error) {
	rows := d.Len()
	if rows == 0 {
		return nil, nil
	}
	bufs := d.Buffers()
	if len(bufs) < 2 || bufs[1] == nil {
		return nil, fmt.Errorf("%d rows and no offsets", rows)
	}
	offs := arrow.Int32Traits.CastFromBytes(bufs[1].Bytes())
	if len(offs) < d.Offset()+rows+1 {
		return nil, fmt.Errorf("%d offsets for %d rows", len(offs), rows)
	}
	offs = offs[d.Offset() : d.Offset()+rows+1]
	if offs[0] < 0 {
		return nil, fmt.Errorf("row 0 starts at %d", offs[0])
	}
	for i := 1; i <= rows; i++ {
		if offs[i] < offs[i-1] {
			return nil, fmt.Errorf("row %d ends at %d, before it starts (%d)", i-1, offs[i], offs[i-1])
		}
	}
	if int(offs[rows]) > n {
		return nil, fmt.Errorf("offsets reach %d, past the %d values", offs[rows], n)
	}
	return offs, nil
}

// BatchRun is the run every row of rec belongs to ("" when rec has no
// rows, no run_id column, or rows of several runs: CheckBatch refuses
// those).
func BatchRun(rec arrow.RecordBatch) string {
	run, _ := batchRun(rec)
	return run
}

// batchRun is the one run_id every row of rec carries ("" without a
// run_id column or rows).
func batchRun(rec arrow.RecordBatch) (string, error) {
	idx := rec.Schema().FieldIndices("run_id")
	if len(idx) == 0 || rec.NumRows() == 0 {
		return "", nil
	}
	var values func(i int) string
	switch col := rec.Column(idx[0]).(type) {
	case *array.String:
		values = col.Value
	case *array.Dictionary:
		s, ok := col.Dictionary().(*array.String)
		if !ok {
			return "", fmt.Errorf("run_id dictionary of type %s", col.Dictionary().DataType())
		}
		values = func(i int) string { return s.Value(col.GetValueIndex(i)) }
	default:
		return "", fmt.Errorf("run_id of type %s", col.DataType())
	}
	run := values(0)
	if err := stream.CheckRunID(run); err != nil {
		return "", fmt.Errorf("row 0: %w", err)
	}
	for i := 1; i < int(rec.NumRows()); i++ {
		if v := values(i); v != run {
			return "", fmt.Errorf("row %d: run_id %q in a batch of run %q; a batch belongs to one run", i, stream.Clip(v), stream.Clip(run))
		}
	}
	return run, nil
}
