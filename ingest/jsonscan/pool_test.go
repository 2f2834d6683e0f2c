package jsonscan

import (
	"bytes"
	"strings"
	"testing"
)

// A stream on a reused window reads only what it read itself: the old
// window's bytes (here brackets and quotes that would break the parse or
// the trailing-whitespace check) are never seen.
func TestStreamReusedWindow(t *testing.T) {
	for range 3 {
		w := bytes.Repeat([]byte(`"{[x`), PooledWindow/4)
		windows.Put(&w)
		s := NewStream(strings.NewReader(` [1, 2, 3] `), PooledWindow)
		var got []int64
		err := s.Run(func(c *Cursor) bool {
			c.Array(func() { got = append(got, c.Int()) })
			return true
		})
		if err != nil || len(got) != 3 || got[2] != 3 {
			t.Fatalf("on a reused window: %v, %v", got, err)
		}
		s.Release()
		if s.buf != nil {
			t.Fatal("Release kept the window")
		}
	}
	// a grown window is not pooled: the pool holds PooledWindow windows only
	s := NewStream(strings.NewReader(`"`+strings.Repeat("a", 3*PooledWindow)+`"`), PooledWindow)
	if err := s.Run(func(c *Cursor) bool { c.Str(); return true }); err != nil {
		t.Fatal(err)
	}
	s.Release()
	for range 4 {
		if b, ok := windows.Get().(*[]byte); ok && len(*b) != PooledWindow {
			t.Fatalf("the pool holds a window of %d bytes", len(*b))
		}
	}
}
