package transport

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/trainscope/trainscope/stream"
)

func bigSliceTable(n int) *stream.SliceTable {
	str := stream.NewStrings()
	tb := stream.NewSliceTable(str, true)
	for i := range n {
		tb.Kind.Append(str.ID("kernel"))
		tb.Cat.Append(str.ID("kernel"))
		tb.Name.Append(str.ID([]string{"gemm", "softmax", "ncclKernel_AllReduce"}[i%3]))
		tb.TS.Append(int64(1_700_000_000_000_000_000 + i*1000))
		tb.Dur.Append(int64(500 + i%7))
		tb.PID.Append(0)
		tb.TID.Append(7)
		tb.Device.Append(0)
		tb.Stream.Append(7)
		tb.Correlation.AppendOpt(int64(i), i%5 != 0)
		tb.ExternalID.AppendNull()
		if i%3 == 0 {
			tb.GridX.Set(i, int32(i))
		}
	}
	return tb
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	rec := bigSliceTable(1000).Record("run-1", "node-7", 3)
	defer rec.Release()
	b, err := Encode("slices_detail", rec)
	if err != nil {
		t.Fatal(err)
	}
	table, got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if table != "slices_detail" || got.NumRows() != 1000 || got.NumCols() != rec.NumCols() {
		t.Fatalf("table %q rows %d cols %d", table, got.NumRows(), got.NumCols())
	}
	for i := range int(rec.NumCols()) {
		if !array.Equal(rec.Column(i), got.Column(i)) {
			t.Errorf("column %s differs after the round trip", rec.ColumnName(i))
		}
	}
}

func TestDecodePoison(t *testing.T) {
	rec := bigSliceTable(10).Record("r", "h", 0)
	defer rec.Release()
	good, err := Encode("slices_detail", rec)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"garbage":   []byte("not arrow at all"),
		"empty":     nil,
		"truncated": good[:len(good)/2],
	}
	// a batch from a build with another schema version
	md := arrow.NewMetadata([]string{metaTable, metaVersion}, []string{"slices_detail", "999"})
	schema := arrow.NewSchema(rec.Schema().Fields(), &md)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	if err := w.Write(array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())); err != nil {
		t.Fatal(err)
	}
	w.Close()
	cases["future version"] = buf.Bytes()
	for name, b := range cases {
		if _, _, err := Decode(b); !errors.Is(err, ErrPoison) {
			t.Errorf("%s: error %v, want ErrPoison", name, err)
		}
	}
}

func TestMessagesBoundSizeAndKeepRows(t *testing.T) {
	rec := bigSliceTable(20000).Record("r", "h", 0)
	defer rec.Release()
	const target = 64 << 10
	msgs, err := Messages("slices_detail", rec, target)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) < 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	var rows int64
	for i, b := range msgs {
		if len(b) > target {
			t.Errorf("message %d is %d bytes, target %d", i, len(b), target)
		}
		table, part, err := Decode(b)
		if err != nil || table != "slices_detail" {
			t.Fatalf("message %d: %q %v", i, table, err)
		}
		// every decoded row equals the source row, strings included
		for r := range part.NumRows() {
			for c := range part.NumCols() {
				got, want := part.Column(int(c)).ValueStr(int(r)), rec.Column(int(c)).ValueStr(int(rows+r))
				if got != want {
					t.Fatalf("message %d row %d column %s: %q, want %q", i, r, part.ColumnName(int(c)), got, want)
				}
			}
		}
		// a compacted dictionary holds only strings the message uses
		name := part.Column(part.Schema().FieldIndices("name")[0]).(*array.Dictionary)
		if n := name.Dictionary().Len(); int64(n) > part.NumRows() {
			t.Errorf("message %d: %d names for %d rows", i, n, part.NumRows())
		}
		rows += part.NumRows()
		part.Release()
	}
	if rows != rec.NumRows() {
		t.Errorf("messages hold %d rows, want %d", rows, rec.NumRows())
	}
}

// compactDict keeps each row's string and null, over a dictionary of the
// strings used, whether the dictionary is short (a slice remaps it) or
// far longer than the rows (a map does).
func TestCompactDict(t *testing.T) {
	for _, dictLen := range []int{8, 50_000} {
		values := make([]string, dictLen)
		for i := range values {
			values[i] = fmt.Sprintf("kernel_%d", i)
		}
		b := array.NewStringBuilder(memory.DefaultAllocator)
		b.AppendValues(values, nil)
		dict := b.NewArray()
		b.Release()
		ib := array.NewInt32Builder(memory.DefaultAllocator)
		for i := range 40 {
			if i%7 == 3 {
				ib.AppendNull()
				continue
			}
			ib.Append(int32((i * 5) % dictLen))
		}
		idx := ib.NewArray()
		ib.Release()
		full := array.NewDictionaryArray(stream.DictString, idx, dict)
		idx.Release()
		dict.Release()
		// a slice, as Messages cuts them: offsets and validity not at 0
		d := array.NewSlice(full, 5, 37).(*array.Dictionary)
		full.Release()
		got := compactDict(d).(*array.Dictionary)
		used := map[string]bool{}
		for i := range d.Len() {
			if got.IsNull(i) != d.IsNull(i) || got.ValueStr(i) != d.ValueStr(i) {
				t.Fatalf("dictionary of %d: row %d is %q (null %v), want %q (null %v)", dictLen, i, got.ValueStr(i), got.IsNull(i), d.ValueStr(i), d.IsNull(i))
			}
			if d.IsValid(i) {
				used[d.ValueStr(i)] = true
			}
		}
		if got.Dictionary().Len() != len(used) {
			t.Errorf("dictionary of %d: %d strings kept, %d used", dictLen, got.Dictionary().Len(), len(used))
		}
		got.Release()
		d.Release()
	}
}
