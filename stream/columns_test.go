package stream

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// Tests of the column builders (Num, Sparse, Strings); the helpers are in
// tables_test.go.

func TestNumAllValidHasNoBitmap(t *testing.T) {
	var c Num[int64]
	for _, v := range []int64{3, -1, 7} {
		c.Append(v)
	}
	if c.Len() != 3 || c.NullCount() != 0 {
		t.Fatalf("Len/NullCount = %d/%d, want 3/0", c.Len(), c.NullCount())
	}
	if c.bits != nil {
		t.Errorf("all-valid column materialised a bitmap: %v", c.bits)
	}
	for i := range 3 {
		if !c.Valid(i) {
			t.Errorf("Valid(%d) = false", i)
		}
	}
	a := c.array(i64)
	defer a.Release()
	if a.Data().Buffers()[0] != nil {
		t.Errorf("all-valid array carries a validity buffer")
	}
	checkNums(t, "c", a, []opt[int64]{some[int64](3), some[int64](-1), some[int64](7)})
}

func TestNumNulls(t *testing.T) {
	// Rows 0..11; nulls at 1, 3 and 9 (9 lies in the second bitmap byte).
	var c Num[int32]
	want := make([]opt[int32], 12)
	for i := range 12 {
		switch i {
		case 1:
			c.AppendNull()
		case 3:
			c.AppendOpt(99, false)
		case 9:
			c.AppendNull()
		case 5:
			c.AppendOpt(50, true)
			want[i] = some[int32](50)
			continue
		default:
			c.Append(int32(i * 10))
			want[i] = some(int32(i * 10))
			continue
		}
		want[i] = none[int32]()
	}
	if c.Len() != 12 || c.NullCount() != 3 {
		t.Fatalf("Len/NullCount = %d/%d, want 12/3", c.Len(), c.NullCount())
	}
	for i, w := range want {
		if c.Valid(i) != w.ok {
			t.Errorf("Valid(%d) = %v, want %v", i, c.Valid(i), w.ok)
		}
	}
	// A null row holds the zero value, not what AppendOpt was given.
	if c.V[3] != 0 {
		t.Errorf("V[3] = %d, want 0", c.V[3])
	}
	a := c.array(i32)
	checkNums(t, "before Set", a, want)
	a.Release()

	// Set fills a null row and fixes the null count; Set on a valid row
	// does not change it.
	c.Set(3, 33)
	want[3] = some[int32](33)
	c.Set(0, -5)
	want[0] = some[int32](-5)
	if c.NullCount() != 2 {
		t.Fatalf("NullCount after Set = %d, want 2", c.NullCount())
	}
	if !c.Valid(3) {
		t.Errorf("Valid(3) = false after Set")
	}
	c.Set(3, 34) // again: already valid, count unchanged
	want[3] = some[int32](34)
	if c.NullCount() != 2 {
		t.Fatalf("NullCount after second Set = %d, want 2", c.NullCount())
	}
	a = c.array(i32)
	checkNums(t, "after Set", a, want)
	a.Release()

	// Filling every null drops the bitmap from the array.
	c.Set(1, 1)
	c.Set(9, 9)
	if c.NullCount() != 0 {
		t.Fatalf("NullCount = %d, want 0", c.NullCount())
	}
	a = c.array(i32)
	defer a.Release()
	if a.NullN() != 0 || a.Data().Buffers()[0] != nil {
		t.Errorf("NullN = %d, bitmap %v; want 0, none", a.NullN(), a.Data().Buffers()[0])
	}
}

func TestNumFirstRowNullFloat(t *testing.T) {
	var c Num[float64]
	c.AppendNull()
	c.Append(1.5)
	c.AppendOpt(2.5, true)
	a := c.array(f64)
	defer a.Release()
	checkNums(t, "f", a, []opt[float64]{none[float64](), some(1.5), some(2.5)})
}

func TestNullsThenSet(t *testing.T) {
	c := Nulls[int64](10)
	if c.Len() != 10 || c.NullCount() != 10 {
		t.Fatalf("Len/NullCount = %d/%d, want 10/10", c.Len(), c.NullCount())
	}
	c.Set(0, 100)
	c.Set(8, 800)
	c.Set(8, 801)
	if c.NullCount() != 8 {
		t.Fatalf("NullCount = %d, want 8", c.NullCount())
	}
	want := make([]opt[int64], 10)
	want[0], want[8] = some[int64](100), some[int64](801)
	a := c.array(i64)
	defer a.Release()
	checkNums(t, "nulls", a, want)
}

func TestEmptyNumArray(t *testing.T) {
	var c Num[int64]
	a := c.array(i64)
	defer a.Release()
	if a.Len() != 0 || a.NullN() != 0 {
		t.Errorf("empty array Len/NullN = %d/%d", a.Len(), a.NullN())
	}
}

// ---- Sparse ----------------------------------------------------------------

func TestSparseDense(t *testing.T) {
	cases := []struct {
		name string
		rows []int
		vals []int64
		n    int
		want []opt[int64]
	}{
		{"empty zero rows", nil, nil, 0, []opt[int64]{}},
		{"no values", nil, nil, 3, []opt[int64]{none[int64](), none[int64](), none[int64]()}},
		{"some", []int{1, 3}, []int64{10, 30}, 5,
			[]opt[int64]{none[int64](), some[int64](10), none[int64](), some[int64](30), none[int64]()}},
		{"all", []int{0, 1}, []int64{7, 8}, 2, []opt[int64]{some[int64](7), some[int64](8)}},
		{"past first byte", []int{0, 9}, []int64{-1, 99}, 11, func() []opt[int64] {
			w := make([]opt[int64], 11)
			w[0], w[9] = some[int64](-1), some[int64](99)
			return w
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s Sparse[int64]
			for i, r := range tc.rows {
				s.Set(r, tc.vals[i])
			}
			d := s.Dense(tc.n)
			if d.Len() != tc.n {
				t.Fatalf("Len = %d, want %d", d.Len(), tc.n)
			}
			wantNulls := tc.n - len(tc.rows)
			if d.NullCount() != wantNulls {
				t.Errorf("NullCount = %d, want %d", d.NullCount(), wantNulls)
			}
			for i, w := range tc.want {
				if d.Valid(i) != w.ok {
					t.Errorf("Valid(%d) = %v, want %v", i, d.Valid(i), w.ok)
				}
				if w.ok && d.V[i] != w.v {
					t.Errorf("V[%d] = %d, want %d", i, d.V[i], w.v)
				}
			}
			a := d.array(i64)
			defer a.Release()
			checkNums(t, "dense", a, tc.want)
		})
	}
}

// ---- Strings ---------------------------------------------------------------

func TestStrings(t *testing.T) {
	s := NewStrings()
	if s.Len() != 1 || s.ID("") != 0 || s.Get(0) != "" {
		t.Fatalf("new table: Len %d, ID(\"\") %d", s.Len(), s.ID(""))
	}
	a := s.ID("alpha")
	b := s.IDBytes([]byte("beta"))
	if a != 1 || b != 2 {
		t.Errorf("ids = %d, %d; want 1, 2", a, b)
	}
	if s.ID("beta") != b || s.IDBytes([]byte("alpha")) != a || s.ID("alpha") != a {
		t.Errorf("repeated lookups changed ids")
	}
	if s.Len() != 3 || s.Get(1) != "alpha" || s.Get(2) != "beta" {
		t.Errorf("Len %d, Get(1) %q, Get(2) %q", s.Len(), s.Get(1), s.Get(2))
	}
	d := s.data()
	defer d.Release()
	arr := array.NewStringData(d)
	defer arr.Release()
	if arr.Len() != 3 || arr.Value(0) != "" || arr.Value(1) != "alpha" || arr.Value(2) != "beta" {
		t.Errorf("dictionary = %v", arr)
	}
}

// ---- SliceTable --------------------------------------------------------------
