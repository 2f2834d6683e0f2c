package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
)

// Cursor walks a window of JSON bytes. Running off the end of the window
// panics with ErrShort, so that the caller can refill and re-parse the unit
// (one event, one array element) from its start; a syntax error panics with
// a *SyntaxError. The caller recovers both around a batch of units.
type Cursor struct {
	B []byte // the window
	I int    // the position in it
}

// Short is the panic value for "the window ends inside this unit".
type Short struct{}

// ErrShort is the Short value the cursor panics with.
var ErrShort = Short{}

// SyntaxError is the panic value for bad JSON: what was wanted, where.
type SyntaxError struct {
	At   int // index in the window
	Want string
}

// Fail panics with a SyntaxError at the cursor.
func (c *Cursor) Fail(want string) {
	panic(&SyntaxError{At: c.I, Want: want})
}

// Peek returns the byte at the cursor.
func (c *Cursor) Peek() byte {
	if c.I >= len(c.B) {
		panic(ErrShort)
	}
	return c.B[c.I]
}

// WS skips whitespace and returns the next byte without consuming it.
func (c *Cursor) WS() byte {
	for c.I < len(c.B) {
		ch := c.B[c.I]
		if ch > ' ' || (ch != ' ' && ch != '\n' && ch != '\r' && ch != '\t') {
			return ch
		}
		c.I++
	}
	panic(ErrShort)
}

// Expect consumes the byte ch after whitespace, or fails with want.
func (c *Cursor) Expect(ch byte, want string) {
	if c.WS() != ch {
		c.Fail(want)
	}
	c.I++
}

// Str reads a JSON string and returns its raw bytes (without quotes;
// escapes are left as they are; Text or Unescape decode them).
func (c *Cursor) Str() []byte {
	if c.WS() != '"' {
		c.Fail("a string")
	}
	start := c.I + 1
	// Most strings in a trace are short keys and names: scan them inline,
	// and hand long ones to IndexByte.
	b := c.B
	j := start
	for lim := min(start+24, len(b)); j < lim; j++ {
		if ch := b[j]; ch == '"' {
			c.I = j + 1
			return b[start:j]
		} else if ch == '\\' {
			break
		}
	}
	for {
		k := bytes.IndexByte(c.B[j:], '"')
		if k < 0 {
			panic(ErrShort)
		}
		j += k
		if c.B[j-1] != '\\' {
			break
		}
		// count the backslashes before the quote: an odd number escapes it
		n := 0
		for p := j - 1; p >= start && c.B[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			break
		}
		j++
	}
	c.I = j + 1
	return c.B[start:j]
}

// Unescape decodes a raw JSON string body that holds escapes.
func Unescape(raw []byte) string {
	q := make([]byte, 0, len(raw)+2)
	q = append(q, '"')
	q = append(q, raw...)
	q = append(q, '"')
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return string(raw)
	}
	return s
}

// Text decodes a raw JSON string body, allocating a copy.
func Text(raw []byte) string {
	if bytes.IndexByte(raw, '\\') >= 0 {
		return Unescape(raw)
	}
	return string(raw)
}

// numEnd returns the end index of a number token starting at c.I.
func (c *Cursor) numEnd() int {
	j := c.I
	for j < len(c.B) {
		ch := c.B[j]
		if (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' || ch == 'E' {
			j++
			continue
		}
		return j
	}
	panic(ErrShort)
}

// Micros reads a number of microseconds (a JSON number or a string holding
// one) and returns it as integer nanoseconds, exactly for up to three
// fractional digits and rounded beyond.
func (c *Cursor) Micros() int64 {
	start := c.I
	ch := c.WS()
	if ch >= '0' && ch <= '9' {
		if ns, ok := c.microsFast(); ok {
			return ns
		}
	}
	if ch == '"' {
		raw := c.Str()
		ns, ok := ParseMicros(bytes.TrimSpace(raw))
		if !ok {
			c.I = start
			c.Fail("a number of microseconds")
		}
		return ns
	}
	end := c.numEnd()
	ns, ok := ParseMicros(c.B[c.I:end])
	if !ok {
		c.Fail("a number of microseconds")
	}
	c.I = end
	return ns
}

// microsFast parses a plain decimal (digits, optionally '.' and digits) in
// one pass; it reports false, moving nothing, for anything else.
func (c *Cursor) microsFast() (int64, bool) {
	b := c.B
	j := c.I
	var whole int64
	for lim := min(j+16, len(b)); j < lim && b[j] >= '0' && b[j] <= '9'; j++ {
		whole = whole*10 + int64(b[j]-'0')
	}
	if j >= len(b) || (b[j] >= '0' && b[j] <= '9') || whole > math.MaxInt64/1000 {
		return 0, false
	}
	ns := whole * 1000
	if b[j] == '.' {
		j++
		frac := j
		scale := int64(100)
		for ; j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
			d := int64(b[j] - '0')
			switch {
			case scale > 0:
				ns += d * scale
				scale /= 10
			case j == frac+3 && d >= 5:
				ns++
			}
		}
		if j >= len(b) || j == frac {
			return 0, false
		}
	}
	if ch := b[j]; ch == 'e' || ch == 'E' || ch == '+' || ch == '-' || ch == '.' {
		return 0, false
	}
	c.I = j
	return ns, true
}

// ParseMicros converts a decimal number of microseconds to nanoseconds,
// exactly for up to three fractional digits and rounded beyond; exponent
// forms are rewritten as plain decimals first.
func ParseMicros(tok []byte) (int64, bool) {
	if len(tok) == 0 {
		return 0, false
	}
	neg := false
	i := 0
	if tok[0] == '-' {
		neg = true
		i++
	}
	var whole int64
	digits := 0
	for ; i < len(tok) && tok[i] >= '0' && tok[i] <= '9'; i++ {
		whole = whole*10 + int64(tok[i]-'0')
		digits++
	}
	// whole == MaxInt64/1000 could overflow once the fraction is added
	if digits == 0 || digits > 16 || whole >= math.MaxInt64/1000 {
		return parseMicrosSlow(tok)
	}
	ns := whole * 1000
	if i < len(tok) && tok[i] == '.' {
		i++
		scale := int64(100)
		fracStart := i
		for ; i < len(tok) && tok[i] >= '0' && tok[i] <= '9'; i++ {
			d := int64(tok[i] - '0')
			switch {
			case scale > 0:
				ns += d * scale
				scale /= 10
			case i == fracStart+3 && d >= 5:
				ns++
			}
		}
	}
	if i != len(tok) {
		return parseMicrosSlow(tok)
	}
	if neg {
		ns = -ns
	}
	return ns, true
}

func parseMicrosSlow(tok []byte) (int64, bool) {
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsNaN(f) || math.Abs(f) > 9e15 {
		return 0, false
	}
	// f*1000 is not exact beyond 2^53 ns (about 104 days since the epoch):
	// read an exponent form as the plain decimal it stands for instead
	if plain, ok := plainDecimal(tok); ok {
		if ns, ok := ParseMicros(plain); ok {
			return ns, true
		}
	}
	return int64(math.Round(f * 1000)), true
}

// plainDecimal rewrites a decimal number with an exponent ("1.5e3") as the
// same number without one ("1500"), for small exponents.
func plainDecimal(tok []byte) ([]byte, bool) {
	e := bytes.IndexAny(tok, "eE")
	if e < 0 {
		return nil, false
	}
	exp, err := strconv.Atoi(string(tok[e+1:]))
	if err != nil || exp < -40 || exp > 40 {
		return nil, false
	}
	m := tok[:e]
	var out []byte
	if len(m) > 0 && m[0] == '-' {
		out = append(out, '-')
		m = m[1:]
	}
	digits := make([]byte, 0, len(m))
	point := len(m)
	for i, ch := range m {
		switch {
		case ch >= '0' && ch <= '9':
			digits = append(digits, ch)
		case ch == '.' && point == len(m):
			point = i
		default:
			return nil, false
		}
	}
	point += exp
	switch {
	case point <= 0:
		out = append(out, "0."...)
		out = append(out, bytes.Repeat([]byte{'0'}, -point)...)
		out = append(out, digits...)
	case point >= len(digits):
		out = append(out, digits...)
		out = append(out, bytes.Repeat([]byte{'0'}, point-len(digits))...)
	default:
		out = append(out, digits[:point]...)
		out = append(out, '.')
		out = append(out, digits[point:]...)
	}
	return out, true
}

// Int reads a JSON number (or a quoted one) as an int64, truncating any
// fraction and saturating values beyond int64.
// A string holding a decimal or 0x-prefixed hex number is read as that
// number; any other string reads as 0.
func (c *Cursor) Int() int64 {
	ch := c.WS()
	if ch == '"' {
		raw := c.Str()
		return ParseIntString(raw)
	}
	// fast path: a plain non-negative integer of up to 18 digits
	b := c.B
	if ch >= '0' && ch <= '9' {
		var v int64
		j := c.I
		for lim := min(j+18, len(b)); j < lim && b[j] >= '0' && b[j] <= '9'; j++ {
			v = v*10 + int64(b[j]-'0')
		}
		if j < len(b) {
			if nx := b[j]; nx != '.' && nx != 'e' && nx != 'E' && (nx < '0' || nx > '9') && nx != '-' && nx != '+' {
				c.I = j
				return v
			}
		}
	}
	end := c.numEnd()
	v, ok := ParseInt(c.B[c.I:end])
	if !ok {
		c.Fail("a number")
	}
	c.I = end
	return v
}

// ParseIntString reads a decimal or 0x-hex number held in a JSON string;
// anything else reads as 0.
func ParseIntString(raw []byte) int64 {
	raw = bytes.TrimSpace(raw)
	if v, ok := ParseInt(raw); ok {
		return v
	}
	if len(raw) > 2 && raw[0] == '0' && (raw[1] == 'x' || raw[1] == 'X') {
		if v, err := strconv.ParseUint(string(raw[2:]), 16, 64); err == nil {
			return int64(v)
		}
	}
	return 0
}

// ParseInt reads a JSON number as an int64, truncating any fraction and
// saturating values beyond int64.
func ParseInt(tok []byte) (int64, bool) {
	if len(tok) == 0 {
		return 0, false
	}
	neg := false
	i := 0
	if tok[0] == '-' {
		neg = true
		i++
	}
	var v uint64
	digits := 0
	for ; i < len(tok) && tok[i] >= '0' && tok[i] <= '9'; i++ {
		if v < math.MaxInt64/10 {
			v = v*10 + uint64(tok[i]-'0')
		} else {
			v = math.MaxInt64
		}
		digits++
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(tok) && (tok[i] == '.' || tok[i] == 'e' || tok[i] == 'E') {
		f, err := strconv.ParseFloat(string(tok), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		// saturate like the integer path (float64(MaxInt64) is 2^63,
		// which int64() would not convert)
		switch {
		case f >= math.MaxInt64:
			return math.MaxInt64, true
		case f <= math.MinInt64:
			return math.MinInt64, true
		}
		return int64(f), true
	}
	if i != len(tok) {
		return 0, false
	}
	if v > math.MaxInt64 {
		v = math.MaxInt64
	}
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

// Float reads a JSON number as float64.
func (c *Cursor) Float() float64 {
	if c.WS() == '"' {
		raw := c.Str()
		f, _ := strconv.ParseFloat(string(raw), 64)
		return f
	}
	end := c.numEnd()
	tok := c.B[c.I:end]
	c.I = end
	if v, ok := fastFloat(tok); ok {
		return v
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		c.I -= len(tok)
		c.Fail("a number")
	}
	return f
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// fastFloat handles plain decimals with at most 15 significant digits.
func fastFloat(tok []byte) (float64, bool) {
	neg := false
	i := 0
	if len(tok) > 0 && tok[0] == '-' {
		neg = true
		i++
	}
	var m uint64
	digits, frac := 0, 0
	seenDot := false
	for ; i < len(tok); i++ {
		ch := tok[i]
		switch {
		case ch >= '0' && ch <= '9':
			m = m*10 + uint64(ch-'0')
			digits++
			if seenDot {
				frac++
			}
		case ch == '.' && !seenDot:
			seenDot = true
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 {
		return 0, false
	}
	f := float64(m) / pow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

// literal reads true, false or null.
func (c *Cursor) literal() {
	for _, w := range [...]string{"true", "false", "null"} {
		if c.B[c.I] == w[0] {
			if c.I+len(w) > len(c.B) {
				panic(ErrShort)
			}
			if string(c.B[c.I:c.I+len(w)]) != w {
				c.Fail("true, false or null")
			}
			c.I += len(w)
			return
		}
	}
	c.Fail("a JSON value")
}

// Skip steps over one JSON value of any type.
func (c *Cursor) Skip() {
	switch ch := c.WS(); {
	case ch == '"':
		c.Str()
	case ch == '{' || ch == '[':
		c.skipNested()
	case ch == '-' || (ch >= '0' && ch <= '9'):
		c.I = c.numEnd()
	default:
		c.literal()
	}
}

// skipNested steps over an object or array by tracking depth; it checks
// bracket balance, not full syntax, which is all a skipped value needs.
func (c *Cursor) skipNested() {
	depth := 0
	b := c.B
	for j := c.I; j < len(b); j++ {
		switch b[j] {
		case '"':
			c.I = j
			c.Str()
			j = c.I - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				c.I = j + 1
				return
			}
		}
	}
	panic(ErrShort)
}

// Raw returns the bytes of the next value.
func (c *Cursor) Raw() []byte {
	c.WS()
	start := c.I
	c.Skip()
	return c.B[start:c.I]
}

// Bool reads true or false; null and anything else read as false.
func (c *Cursor) Bool() bool {
	ch := c.WS()
	if ch == 't' || ch == 'f' || ch == 'n' {
		c.literal()
		return ch == 't'
	}
	c.Skip()
	return false
}

// Object calls field for each key of the object at the cursor; field must
// consume the key's value.
func (c *Cursor) Object(field func(key []byte)) {
	c.Expect('{', "an object")
	if c.WS() == '}' {
		c.I++
		return
	}
	for {
		key := c.Str()
		c.Expect(':', "':' after a key")
		field(key)
		switch c.WS() {
		case ',':
			c.I++
		case '}':
			c.I++
			return
		default:
			c.Fail("',' or '}' in an object")
		}
	}
}

// Array calls elem for each element of the array at the cursor (a value
// of another type is skipped); elem must consume the element.
func (c *Cursor) Array(elem func()) {
	if c.WS() != '[' {
		c.Skip()
		return
	}
	c.I++
	if c.WS() == ']' {
		c.I++
		return
	}
	for {
		elem()
		switch c.WS() {
		case ',':
			c.I++
		case ']':
			c.I++
			return
		default:
			c.Fail("',' or ']' in an array")
		}
	}
}
