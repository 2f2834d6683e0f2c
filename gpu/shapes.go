package gpu

import (
	"encoding/json"
	"strings"
)

// An opArg is one argument of a recorded operator call as the profiler's
// record_shapes gives it: a tensor's dims, a tensor list's dims, or
// nothing (a scalar, None).
type opArg struct {
	dims  []int64   // a tensor's shape; nil when not a tensor
	list  [][]int64 // a tensor list's shapes
	isT   bool      // a tensor (dims may be empty: a 0-d tensor)
	typ   string    // "Input type" entry: c10::BFloat16, float, Scalar, TensorList
	value string    // "Concrete Inputs" entry: "True", "[1, 1]", "0.125", ""
}

// numel is a tensor's element count; 0 when it is not a tensor or the
// count does not fit.
func (a opArg) numel() int64 {
	if !a.isT {
		return 0
	}
	return numel(a.dims)
}

// prod multiplies counts, or gives -1 when one is negative or the product
// passes 2^62 (a shape no GPU holds: the call is not counted).
func prod(xs ...int64) int64 {
	p := int64(1)
	for _, x := range xs {
		if x < 0 || (x > 0 && p > (1<<62)/x) {
			return -1
		}
		p *= x
	}
	return p
}

func numel(d []int64) int64 {
	n := int64(1)
	for _, x := range d {
		if x < 0 || x > 1<<40 || (x > 0 && n > (1<<62)/x) {
			return 0
		}
		n *= x
	}
	return n
}

// listNumel is the elements of every tensor of a list.
func (a opArg) listNumel() int64 {
	var n int64
	for _, d := range a.list {
		n += numel(d)
	}
	return n
}

// elt is the bytes per element of the argument's dtype, or def when the
// type says nothing (TensorList, unknown).
func (a opArg) elt(def int64) int64 {
	if n := eltBytes(a.typ); n > 0 {
		return n
	}
	return def
}

// eltBytes is the size of a PyTorch scalar type as "Input type" names it.
func eltBytes(t string) int64 {
	switch strings.TrimPrefix(t, "c10::") {
	case "double", "long int", "long", "int64_t", "complex<float>":
		return 8
	case "float", "Float", "int", "unsigned int":
		return 4
	case "BFloat16", "Half", "short int", "short":
		return 2
	case "bool", "unsigned char", "signed char", "Float8_e4m3fn", "Float8_e5m2", "Float8_e4m3fnuz", "Float8_e5m2fnuz":
		return 1
	}
	return 0
}

// truthy reads a concrete boolean input.
func (a opArg) truthy() bool { return a.value == "True" || a.value == "true" || a.value == "1" }

// ints reads a concrete int list input ("[1, 1]") or a single int ("2").
func (a opArg) ints() []int64 {
	v := strings.TrimSpace(a.value)
	if v == "" {
		return nil
	}
	var out []int64
	if err := json.Unmarshal([]byte(v), &out); err == nil {
		return out
	}
	var one int64
	if err := json.Unmarshal([]byte(v), &one); err == nil {
		return []int64{one}
	}
	return nil
}

// parseArgs reads an operator's "Input Dims", "Input type" and "Concrete
// Inputs" JSON into its arguments; ok is false when the dims are not an
// array of shapes.
func parseArgs(dims, types, concrete []byte) ([]opArg, bool) {
	p := shapeParser{b: dims}
	args, ok := p.args()
	if !ok {
		return nil, false
	}
	// the three lists name the same arguments; a trace that trims one
	// (trailing Nones) still gives the others by position
	ts, cs := stringArray(types), stringArray(concrete)
	for len(args) < min(max(len(ts), len(cs)), 64) {
		args = append(args, opArg{})
	}
	for i, s := range ts {
		if i < len(args) {
			args[i].typ = s
		}
	}
	for i, s := range cs {
		if i < len(args) {
			args[i].value = s
		}
	}
	return args, true
}

// stringArray decodes a JSON array of strings; nil when it is not one.
// The profiler's type and value strings have no escapes, so the common
// case is a scan; anything else goes through encoding/json.
func stringArray(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	var out []string
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out
	}
	for i < len(b) {
		if b[i] != '"' {
			return slowStrings(b)
		}
		j := i + 1
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' {
				return slowStrings(b)
			}
			j++
		}
		if j >= len(b) {
			return nil
		}
		out = append(out, string(b[i+1:j]))
		i = skipWS(b, j+1)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return out
		}
		return nil
	}
	return nil
}

func slowStrings(b []byte) []string {
	var out []string
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// shapeParser reads "Input Dims": an array whose entries are a shape
// ([2, 3]), an empty array (a scalar or None) or a list of shapes (a
// tensor list), without going through reflection.
type shapeParser struct {
	b []byte
	i int
}

func (p *shapeParser) ws() { p.i = skipWS(p.b, p.i) }

func (p *shapeParser) eat(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// list reads "[]" or "[item, item, ...]", item reading one entry.
func (p *shapeParser) list(item func() bool) bool {
	if !p.eat('[') {
		return false
	}
	if p.eat(']') {
		return true
	}
	for {
		if !item() {
			return false
		}
		if p.eat(',') {
			continue
		}
		return p.eat(']')
	}
}

func (p *shapeParser) args() ([]opArg, bool) {
	var out []opArg
	ok := p.list(func() bool {
		a, ok := p.arg()
		out = append(out, a)
		return ok
	})
	return out, ok
}

// arg reads one entry: [] (no tensor), [ints] (a tensor) or [[ints], ...]
// (a tensor list).
func (p *shapeParser) arg() (opArg, bool) {
	start := p.i
	if p.eat('[') && p.eat('[') {
		p.i = start
		var list [][]int64
		ok := p.list(func() bool {
			d, ok := p.ints()
			list = append(list, d)
			return ok
		})
		return opArg{list: list}, ok
	}
	p.i = start
	d, ok := p.ints()
	if !ok || len(d) == 0 {
		return opArg{}, ok
	}
	return opArg{dims: d, isT: true}, true
}

func (p *shapeParser) ints() ([]int64, bool) {
	d := []int64{}
	ok := p.list(func() bool {
		v, ok := p.int()
		d = append(d, v)
		return ok
	})
	return d, ok
}

func (p *shapeParser) int() (int64, bool) {
	p.ws()
	neg := false
	if p.i < len(p.b) && p.b[p.i] == '-' {
		neg = true
		p.i++
	}
	start := p.i
	var v int64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		if v > (1<<62)/10 {
			return 0, false
		}
		v = v*10 + int64(p.b[p.i]-'0')
		p.i++
	}
	if p.i == start {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// CompactShape is an operator's "Input Dims" without whitespace and
// without the trailing empty entries of its scalar arguments: the key by
// which calls of one shape group ("[[8944,1024],[1024,1024]]").
func CompactShape(dims []byte) string {
	var sb strings.Builder
	sb.Grow(len(dims))
	for _, c := range dims {
		if c != ' ' && c != '\n' && c != '\t' && c != '\r' {
			sb.WriteByte(c)
		}
	}
	s := sb.String()
	for strings.HasSuffix(s, ",[]]") {
		s = s[:len(s)-4] + "]"
	}
	return s
}
