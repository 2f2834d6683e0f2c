package stream

import (
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DictString is the Arrow type of every dictionary-encoded string column.
var DictString = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// validity is an Arrow validity bitmap that grows with its column. It is
// materialised only once the first null is appended, so all-valid columns
// carry no bitmap at all.
type validity struct {
	bits  []byte
	nulls int
}

func (v *validity) grow(n int) {
	need := bitutil.BytesForBits(int64(n))
	for len(v.bits) < int(need) {
		v.bits = append(v.bits, 0xff)
	}
}

// mark records the validity of row i (rows are appended in order).
func (v *validity) mark(i int, ok bool) {
	if ok && v.bits == nil {
		return
	}
	v.grow(i + 1)
	if ok {
		bitutil.SetBit(v.bits, i)
	} else {
		bitutil.ClearBit(v.bits, i)
		v.nulls++
	}
}

func (v *validity) buffer(n int) *memory.Buffer {
	if v.nulls == 0 {
		return nil
	}
	v.grow(n)
	return memory.NewBufferBytes(v.bits)
}

// Num is a column of fixed-width numbers backed by a Go slice.
type Num[T int32 | int64 | float64 | uint8] struct {
	V []T
	validity
}

// Append adds a valid value.
func (c *Num[T]) Append(x T) {
	c.V = append(c.V, x)
	if c.bits != nil {
		c.mark(len(c.V)-1, true)
	}
}

// AppendNull adds a null.
func (c *Num[T]) AppendNull() {
	var zero T
	c.V = append(c.V, zero)
	c.mark(len(c.V)-1, false)
}

// AppendOpt adds x when ok, else a null.
func (c *Num[T]) AppendOpt(x T, ok bool) {
	if ok {
		c.Append(x)
	} else {
		c.AppendNull()
	}
}

// Len is the number of rows.
func (c *Num[T]) Len() int { return len(c.V) }

// Valid reports whether row i holds a value.
func (c *Num[T]) Valid(i int) bool {
	return c.nulls == 0 || c.bits == nil || bitutil.BitIsSet(c.bits, i)
}

// Set overwrites row i with a valid value.
func (c *Num[T]) Set(i int, x T) {
	c.V[i] = x
	if c.bits != nil && !bitutil.BitIsSet(c.bits, i) {
		bitutil.SetBit(c.bits, i)
		c.nulls--
	}
}

func (c *Num[T]) array(dt arrow.DataType) arrow.Array {
	n := len(c.V)
	var zero T
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(c.V))), n*int(unsafe.Sizeof(zero)))
	data := array.NewData(dt, n, []*memory.Buffer{c.buffer(n), memory.NewBufferBytes(raw)}, nil, c.nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// Dict is a dictionary-encoded string column: int32 indices into a Strings
// table shared by all dictionary columns of one record.
type Dict struct {
	Num[int32]
}

func (c *Dict) dictArray(dict *array.Data) arrow.Array {
	n := len(c.V)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(c.V))), n*4)
	data := array.NewDataWithDictionary(DictString, n, []*memory.Buffer{c.buffer(n), memory.NewBufferBytes(raw)}, c.nulls, 0, dict)
	defer data.Release()
	return array.MakeFromData(data)
}

// Strings interns strings to dense int32 ids. Lookups with a []byte key do
// not allocate.
type Strings struct {
	ids  map[string]int32
	list []string
}

// NewStrings returns an empty table whose id 0 is the empty string.
func NewStrings() *Strings {
	s := &Strings{ids: make(map[string]int32, 1024)}
	s.ID("")
	return s
}

// ID returns the id of s, adding it when new.
func (s *Strings) ID(str string) int32 {
	if id, ok := s.ids[str]; ok {
		return id
	}
	id := int32(len(s.list))
	s.ids[str] = id
	s.list = append(s.list, str)
	return id
}

// IDBytes is ID for a byte slice; it allocates only for a new string.
func (s *Strings) IDBytes(b []byte) int32 {
	if id, ok := s.ids[string(b)]; ok {
		return id
	}
	return s.ID(string(b))
}

// Lookup returns the id of str if the table has it, without adding it.
func (s *Strings) Lookup(str string) (int32, bool) {
	id, ok := s.ids[str]
	return id, ok
}

// Get returns the string of an id.
func (s *Strings) Get(id int32) string { return s.list[id] }

// Len is the number of distinct strings.
func (s *Strings) Len() int { return len(s.list) }

func (s *Strings) data() *array.Data {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(s.list, nil)
	arr := b.NewStringArray()
	defer arr.Release()
	d := arr.Data().(*array.Data)
	d.Retain()
	return d
}

// Nulls returns a column of n null rows, to be filled with Set.
func Nulls[T int32 | int64 | float64 | uint8](n int) Num[T] {
	c := Num[T]{V: make([]T, n)}
	c.bits = make([]byte, bitutil.BytesForBits(int64(n)))
	c.nulls = n
	return c
}

// NullCount is the number of null rows.
func (c *Num[T]) NullCount() int { return c.nulls }

// Sparse collects a mostly-null column as (row, value) pairs and becomes a
// full column only when the record is built; appending costs nothing for
// rows that have no value.
type Sparse[T int32 | int64 | float64 | uint8] struct {
	Rows []int32
	Vals []T
}

// Set gives row its value; rows must be set in increasing order.
func (s *Sparse[T]) Set(row int, v T) {
	s.Rows = append(s.Rows, int32(row))
	s.Vals = append(s.Vals, v)
}

// Fill gives each of rows (increasing) its value in vals unless the row
// already has one, keeping the rows in order.
func (s *Sparse[T]) Fill(rows []int32, vals []T) {
	if len(rows) == 0 {
		return
	}
	outR := make([]int32, 0, len(s.Rows)+len(rows))
	outV := make([]T, 0, len(s.Rows)+len(rows))
	i := 0
	for j, r := range rows {
		for i < len(s.Rows) && s.Rows[i] < r {
			outR, outV = append(outR, s.Rows[i]), append(outV, s.Vals[i])
			i++
		}
		if i < len(s.Rows) && s.Rows[i] == r {
			continue
		}
		outR, outV = append(outR, r), append(outV, vals[j])
	}
	s.Rows, s.Vals = append(outR, s.Rows[i:]...), append(outV, s.Vals[i:]...)
}

// Dense materialises the column for n rows.
func (s *Sparse[T]) Dense(n int) Num[T] {
	c := Nulls[T](n)
	for i, r := range s.Rows {
		c.V[r] = s.Vals[i]
		bitutil.SetBit(c.bits, int(r))
	}
	c.nulls = n - len(s.Rows)
	return c
}

// SparseDict is a mostly-null dictionary column.
type SparseDict struct {
	Sparse[int32]
}

func (s *SparseDict) dictArray(n int, dict *array.Data) arrow.Array {
	d := Dict{Num: s.Dense(n)}
	return d.dictArray(dict)
}

// Range copies rows [lo, hi) of c into a column of their own.
func (c *Num[T]) Range(lo, hi int) Num[T] {
	out := Num[T]{V: append([]T(nil), c.V[lo:hi]...)}
	if c.nulls > 0 && c.bits != nil {
		for i := range hi - lo {
			if !bitutil.BitIsSet(c.bits, lo+i) {
				out.mark(i, false)
			} else if out.bits != nil {
				out.mark(i, true)
			}
		}
	}
	return out
}

// Range is the values of s's rows in [lo, hi), numbered from lo.
func (s *Sparse[T]) Range(lo, hi int) Sparse[T] {
	i, _ := slices.BinarySearch(s.Rows, int32(lo))
	j, _ := slices.BinarySearch(s.Rows, int32(hi))
	out := Sparse[T]{Rows: make([]int32, j-i), Vals: append([]T(nil), s.Vals[i:j]...)}
	for k, r := range s.Rows[i:j] {
		out.Rows[k] = r - int32(lo)
	}
	return out
}
