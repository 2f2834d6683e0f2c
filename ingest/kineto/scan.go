package kineto

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
)

// cursor walks a window of JSON bytes. Running off the end of the window
// panics with errShort, so that the reader can refill and re-parse the unit
// (one event, or one top-level key and value) from its start; a syntax error
// panics with a *syntaxError. Both are recovered in reader.chunk.
type cursor struct {
	b []byte
	i int
}

type shortInput struct{}

var errShort = shortInput{}

type syntaxError struct {
	at   int // index in the window
	want string
}

func (c *cursor) fail(want string) {
	panic(&syntaxError{at: c.i, want: want})
}

func (c *cursor) peek() byte {
	if c.i >= len(c.b) {
		panic(errShort)
	}
	return c.b[c.i]
}

func (c *cursor) ws() byte {
	for c.i < len(c.b) {
		ch := c.b[c.i]
		if ch > ' ' || (ch != ' ' && ch != '\n' && ch != '\r' && ch != '\t') {
			return ch
		}
		c.i++
	}
	panic(errShort)
}

func (c *cursor) expect(ch byte, want string) {
	if c.ws() != ch {
		c.fail(want)
	}
	c.i++
}

// str reads a JSON string and returns its raw bytes (without quotes;
// escapes are left as they are: see builder.intern).
func (c *cursor) str() []byte {
	if c.ws() != '"' {
		c.fail("a string")
	}
	start := c.i + 1
	// Most strings in a trace are short keys and names: scan them inline,
	// and hand long ones to IndexByte.
	b := c.b
	j := start
	for lim := min(start+24, len(b)); j < lim; j++ {
		if ch := b[j]; ch == '"' {
			c.i = j + 1
			return b[start:j]
		} else if ch == '\\' {
			break
		}
	}
	for {
		k := bytes.IndexByte(c.b[j:], '"')
		if k < 0 {
			panic(errShort)
		}
		j += k
		if c.b[j-1] != '\\' {
			break
		}
		// count the backslashes before the quote: an odd number escapes it
		n := 0
		for p := j - 1; p >= start && c.b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			break
		}
		j++
	}
	c.i = j + 1
	return c.b[start:j]
}

// unescape decodes a raw JSON string body that holds escapes.
func unescape(raw []byte) string {
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

// text decodes a raw JSON string body, allocating a copy.
func text(raw []byte) string {
	if bytes.IndexByte(raw, '\\') >= 0 {
		return unescape(raw)
	}
	return string(raw)
}

// numEnd returns the end index of a number token starting at c.i.
func (c *cursor) numEnd() int {
	j := c.i
	for j < len(c.b) {
		ch := c.b[j]
		if (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' || ch == 'E' {
			j++
			continue
		}
		return j
	}
	panic(errShort)
}

// micros reads a number of microseconds (a JSON number or a string holding
// one) and returns it as integer nanoseconds, exactly for up to three
// fractional digits and rounded beyond.
func (c *cursor) micros() int64 {
	start := c.i
	ch := c.ws()
	if ch >= '0' && ch <= '9' {
		if ns, ok := c.microsFast(); ok {
			return ns
		}
	}
	if ch == '"' {
		raw := c.str()
		ns, ok := parseMicros(bytes.TrimSpace(raw))
		if !ok {
			c.i = start
			c.fail("a number of microseconds")
		}
		return ns
	}
	end := c.numEnd()
	ns, ok := parseMicros(c.b[c.i:end])
	if !ok {
		c.fail("a number of microseconds")
	}
	c.i = end
	return ns
}

// microsFast parses a plain decimal (digits, optionally '.' and digits) in
// one pass; it reports false, moving nothing, for anything else.
func (c *cursor) microsFast() (int64, bool) {
	b := c.b
	j := c.i
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
	c.i = j
	return ns, true
}

func parseMicros(tok []byte) (int64, bool) {
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
		if ns, ok := parseMicros(plain); ok {
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

// int reads a JSON number (or a quoted one) as an int64, truncating any
// fraction and saturating values beyond int64.
// A string holding a decimal or 0x-prefixed hex number is read as that
// number; any other string reads as 0.
func (c *cursor) int() int64 {
	ch := c.ws()
	if ch == '"' {
		raw := c.str()
		return parseIntString(raw)
	}
	// fast path: a plain non-negative integer of up to 18 digits
	b := c.b
	if ch >= '0' && ch <= '9' {
		var v int64
		j := c.i
		for lim := min(j+18, len(b)); j < lim && b[j] >= '0' && b[j] <= '9'; j++ {
			v = v*10 + int64(b[j]-'0')
		}
		if j < len(b) {
			if nx := b[j]; nx != '.' && nx != 'e' && nx != 'E' && (nx < '0' || nx > '9') && nx != '-' && nx != '+' {
				c.i = j
				return v
			}
		}
	}
	end := c.numEnd()
	v, ok := parseInt(c.b[c.i:end])
	if !ok {
		c.fail("a number")
	}
	c.i = end
	return v
}

func parseIntString(raw []byte) int64 {
	raw = bytes.TrimSpace(raw)
	if v, ok := parseInt(raw); ok {
		return v
	}
	if len(raw) > 2 && raw[0] == '0' && (raw[1] == 'x' || raw[1] == 'X') {
		if v, err := strconv.ParseUint(string(raw[2:]), 16, 64); err == nil {
			return int64(v)
		}
	}
	return 0
}

func parseInt(tok []byte) (int64, bool) {
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

// float reads a JSON number as float64.
func (c *cursor) float() float64 {
	if c.ws() == '"' {
		raw := c.str()
		f, _ := strconv.ParseFloat(string(raw), 64)
		return f
	}
	end := c.numEnd()
	tok := c.b[c.i:end]
	c.i = end
	if v, ok := fastFloat(tok); ok {
		return v
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		c.i -= len(tok)
		c.fail("a number")
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
func (c *cursor) literal() {
	for _, w := range [...]string{"true", "false", "null"} {
		if c.b[c.i] == w[0] {
			if c.i+len(w) > len(c.b) {
				panic(errShort)
			}
			if string(c.b[c.i:c.i+len(w)]) != w {
				c.fail("true, false or null")
			}
			c.i += len(w)
			return
		}
	}
	c.fail("a JSON value")
}

// skip steps over one JSON value of any type.
func (c *cursor) skip() {
	switch ch := c.ws(); {
	case ch == '"':
		c.str()
	case ch == '{' || ch == '[':
		c.skipNested()
	case ch == '-' || (ch >= '0' && ch <= '9'):
		c.i = c.numEnd()
	default:
		c.literal()
	}
}

// skipNested steps over an object or array by tracking depth; it checks
// bracket balance, not full syntax, which is all a skipped value needs.
func (c *cursor) skipNested() {
	depth := 0
	b := c.b
	for j := c.i; j < len(b); j++ {
		switch b[j] {
		case '"':
			c.i = j
			c.str()
			j = c.i - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				c.i = j + 1
				return
			}
		}
	}
	panic(errShort)
}

// raw returns the bytes of the next value.
func (c *cursor) raw() []byte {
	c.ws()
	start := c.i
	c.skip()
	return c.b[start:c.i]
}
