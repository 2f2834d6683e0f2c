package kineto

import (
	"testing"

	"github.com/trainscope/trainscope/ingest/jsonscan"
)

func cur(s string) cursor { return cursor{&jsonscan.Cursor{B: []byte(s)}} }

func catch(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

func TestTriple(t *testing.T) {
	var d [3]int64
	c := cur(`[1, 2, 3],`)
	if ok := c.triple(&d); !ok || d != [3]int64{1, 2, 3} || c.I != 9 {
		t.Errorf("triple = %v %v at %d", ok, d, c.I)
	}
	d = [3]int64{}
	c = cur(`[1, 2],`)
	if ok := c.triple(&d); ok || c.I != 6 {
		t.Errorf("short triple = %v at %d", ok, c.I)
	}
	c = cur(`[1,2,3,4],`)
	if ok := c.triple(&d); ok || c.I != 9 {
		t.Errorf("long triple = %v at %d", ok, c.I)
	}
	c = cur(`"1,2,3",`)
	if ok := c.triple(&d); ok || c.I != 7 {
		t.Errorf("string triple = %v at %d", ok, c.I)
	}
	c = cur(`[1;2]`)
	if _, ok := catch(func() { c.triple(&d) }).(*jsonscan.SyntaxError); !ok {
		t.Errorf("bad triple did not fail")
	}
}
