package mdfmt

import (
	"strings"
	"testing"
)

func TestShorten(t *testing.T) {
	long := strings.Repeat("x", 100)
	stack := "cpu_op ProfilerStep#* > ## optimizer ## > Optimizer.step#Shampoo.step > aten::_foreach_mul_ > aten::mul"
	cases := []struct{ in, want string }{
		{"short", "short"},
		// text keeps its beginning
		{long, strings.Repeat("x", maxCell-1) + "…"},
		// a call stack keeps its kind and its innermost whole frames
		{stack, "cpu_op … > Optimizer.step#Shampoo.step > aten::_foreach_mul_ > aten::mul"},
		{"cpu_op … > ## optimizer ## > " + long, "cpu_op …" + long[100-(maxCell-len([]rune("cpu_op …"))):]},
	}
	for _, c := range cases {
		got := shorten(c.in)
		if got != c.want || len([]rune(got)) > maxCell {
			t.Errorf("shorten(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
