package transport

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// stringArray is a string array over chars cut at offs, nulls where null.
func stringArray(chars string, offs []int32, null map[int]bool) arrow.ArrayData {
	var valid []byte
	if len(null) > 0 {
		valid = make([]byte, (len(offs)+6)/8)
		for i := range len(offs) - 1 {
			if !null[i] {
				valid[i/8] |= 1 << (i % 8)
			}
		}
	}
	var validity *memory.Buffer
	if valid != nil {
		validity = memory.NewBufferBytes(valid)
	}
	return array.NewData(arrow.BinaryTypes.String, len(offs)-1,
		[]*memory.Buffer{validity, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs)), memory.NewBufferBytes([]byte(chars))},
		nil, len(null), 0)
}

// Every string must be UTF-8 on its own: bytes that are valid together
// but cut inside a character are not.
func TestCheckArrayUTF8(t *testing.T) {
	for _, tc := range []struct {
		name  string
		chars string
		offs  []int32
		null  map[int]bool
		bad   string // in the error, "" if none
	}{
		{"ascii", "gemmsoftmax", []int32{0, 4, 11}, nil, ""},
		{"multibyte", "é∑x", []int32{0, 2, 5, 6}, nil, ""},
		{"empty rows", "é", []int32{0, 0, 2, 2}, nil, ""},
		{"cut inside a character", "é", []int32{0, 1, 2}, nil, "row 0"},
		{"a row ending mid-character", "aé", []int32{0, 2, 3}, nil, "row 0"},
		{"invalid bytes", "ab\xffc", []int32{0, 2, 4}, nil, "row 1"},
		{"invalid bytes under a null", "ab\xffc", []int32{0, 2, 4}, map[int]bool{1: true}, ""},
		{"invalid bytes past the rows", "ab\xff", []int32{0, 2}, nil, ""},
	} {
		d := stringArray(tc.chars, tc.offs, tc.null)
		err := checkArray(d)
		d.Release()
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.bad)
		}
	}
}

// validStrings agrees with checking each string alone, over random bytes
// (ASCII, multibyte characters and stray bytes) cut at random offsets.
func TestValidStringsAsEachRow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "z", "é", "∑", "😀", "\x80", "\xc3", "\xff", ""}
	for range 20_000 {
		var sb strings.Builder
		for range r.IntN(12) {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		chars := []byte(sb.String())
		offs := []int32{int32(r.IntN(len(chars) + 1))}
		for range r.IntN(6) {
			last := offs[len(offs)-1]
			offs = append(offs, last+int32(r.IntN(len(chars)-int(last)+1)))
		}
		want := true
		for i := range len(offs) - 1 {
			want = want && utf8.Valid(chars[offs[i]:offs[i+1]])
		}
		if got := validStrings(chars, offs); got != want {
			t.Fatalf("%q cut at %v: validStrings %v, each row alone %v", chars, offs, got, want)
		}
	}
}
