package kineto

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestProjectRows(t *testing.T) {
	const n = 100_000
	for _, tc := range []struct {
		name         string
		sizeHint, at int64
		want         int
	}{
		{"size unknown: an eighth more", 0, 1 << 20, n + n/8},
		{"a third read: twice, not three times", 3 << 20, 1 << 20, 2 * n},
		{"two thirds read: the rest at the same rate, plus 5%", 3 << 20, 2 << 20, 157_500},
		{"nearly all read: still an eighth more", 100 << 20, 99 << 20, n + n/8},
		{"read past the hint: an eighth more", 1 << 20, 2 << 20, n + n/8},
	} {
		b := builder{sizeHint: tc.sizeHint, at: tc.at}
		if got := b.projectRows(n); got != tc.want {
			t.Errorf("%s: projectRows(%d) = %d, want %d", tc.name, n, got, tc.want)
		}
	}
}

// A size hint that is wrong either way changes how the columns grow, never
// what they hold.
func TestSizeHintDoesNotChangeRows(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(`{"traceEvents":[`)
	const events = minProjectRows + 5000 // past the first projection
	for i := range events {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"ph":"X","cat":"cpu_op","name":"op%d","pid":1,"tid":%d,"ts":%d,"dur":1}`, i%7, 1+i%3, 10*i)
	}
	sb.WriteString(`]}`)
	doc := sb.String()
	read := func(hint int64) *Trace {
		tr, err := Read(strings.NewReader(doc), "hint.json", Options{Rank: -1, SizeHint: hint})
		if err != nil {
			t.Fatalf("hint %d: %v", hint, err)
		}
		return tr
	}
	want := read(0)
	if want.Slices.Len() != events {
		t.Fatalf("%d rows, want %d", want.Slices.Len(), events)
	}
	for _, hint := range []int64{1, int64(len(doc)) / 10, int64(len(doc)), 50 * int64(len(doc))} {
		got := read(hint)
		if got.Slices.Len() != events || !slices.Equal(got.Slices.TS.V, want.Slices.TS.V) ||
			!slices.Equal(got.Slices.Name.V, want.Slices.Name.V) || !slices.Equal(got.Slices.SelfDur.V, want.Slices.SelfDur.V) {
			t.Errorf("hint %d: %d rows, columns differ from the read without a hint", hint, got.Slices.Len())
		}
	}
}
