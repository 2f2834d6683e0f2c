package transport

import (
	"bytes"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/trainscope/trainscope/stream"
)

// compactDicts returns rec with every dictionary column rebuilt over only
// the strings its rows use. A reader's dictionary columns share one string
// table for the whole trace; the IPC writer sends a column's whole
// dictionary with every message, so a 1 MiB slice of a trace would
// otherwise carry the trace's every kernel name once per string column.
func compactDicts(rec arrow.RecordBatch) arrow.RecordBatch {
	cols := make([]arrow.Array, rec.NumCols())
	changed := false
	for i, c := range rec.Columns() {
		d, ok := c.(*array.Dictionary)
		if !ok {
			c.Retain()
			cols[i] = c
			continue
		}
		cols[i] = compactDict(d)
		changed = true
	}
	if !changed {
		for _, c := range cols {
			c.Release()
		}
		rec.Retain()
		return rec
	}
	return stream.NewRecord(rec.Schema(), cols, int(rec.NumRows()))
}

func compactDict(d *array.Dictionary) arrow.Array {
	values, ok := d.Dictionary().(*array.String)
	idx, ok2 := d.Indices().(*array.Int32)
	if !ok || !ok2 {
		d.Retain()
		return d
	}
	n := idx.Len()
	newIdx := make([]int32, n)
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	defer sb.Release()
	// old index -> new index + 1 (0: not used yet): a slice when the
	// dictionary is not much longer than the rows (a map lookup a row was
	// a third of the publisher's dictionary work), else a map
	var dense []int32
	var sparse map[int32]int32
	if values.Len() <= 4*n+1024 {
		dense = make([]int32, values.Len())
	} else {
		sparse = make(map[int32]int32)
	}
	next := int32(0)
	for i := range n {
		if idx.IsNull(i) {
			continue
		}
		old := idx.Value(i)
		var id int32
		if dense != nil {
			id = dense[old]
		} else {
			id = sparse[old]
		}
		if id == 0 {
			next++
			id = next
			if dense != nil {
				dense[old] = id
			} else {
				sparse[old] = id
			}
			sb.Append(values.Value(int(old)))
		}
		newIdx[i] = id - 1
	}
	dict := sb.NewArray()
	defer dict.Release()
	var validity *memory.Buffer
	if idx.NullN() > 0 {
		// the slice's validity bits start at its offset: copy them aligned
		v := make([]byte, (n+7)/8)
		for i := range n {
			if idx.IsValid(i) {
				v[i/8] |= 1 << (i % 8)
			}
		}
		validity = memory.NewBufferBytes(v)
	}
	data := array.NewDataWithDictionary(d.DataType(), n,
		[]*memory.Buffer{validity, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(newIdx))}, idx.NullN(), 0, dict.Data().(*array.Data))
	defer data.Release()
	return array.MakeFromData(data)
}

// Messages cuts rec into encoded messages of about target bytes or less,
// each with dictionaries holding only the strings it uses.
func Messages(table string, rec arrow.RecordBatch, target int) ([][]byte, error) {
	n := rec.NumRows()
	if n == 0 {
		return nil, nil
	}
	// a first guess from a sample, then halve any part that came out big
	per := int64(4096)
	var out [][]byte
	scratch := encodeBuffers.Get().(*bytes.Buffer)
	defer encodeBuffers.Put(scratch)
	for lo := int64(0); lo < n; {
		hi := min(lo+per, n)
		part := rec.NewSlice(lo, hi)
		small := compactDicts(part)
		part.Release()
		scratch.Reset()
		err := encodeTo(scratch, table, small)
		small.Release()
		if err != nil {
			return nil, err
		}
		b := scratch.Bytes()
		if len(b) > target && hi-lo > 1 {
			per = max((hi-lo)/2, 1)
			continue
		}
		out = append(out, bytes.Clone(b))
		// aim the next part at 90% of the target from this part's bytes per row
		bytesPerRow := float64(len(b)) / float64(hi-lo)
		per = max(int64(float64(target)*0.9/bytesPerRow), 1)
		lo = hi
	}
	return out, nil
}

// encodeBuffers are the buffers Messages encodes into, each message
// copied out: a buffer grown from nothing for each message, doubling, cost
// as much again in copies and zeroed memory (bench/tmp/r64 x 16: 0.6 s of
// the publisher's 2.5 s).
var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// CompactDicts is rec with every dictionary column over only the strings
// its rows use (rec itself, retained, when it has none). The caller
// releases the result.
func CompactDicts(rec arrow.RecordBatch) arrow.RecordBatch { return compactDicts(rec) }
