package jsonscan

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// catch runs f and returns what it panicked with (nil when it returned).
func catch(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

func TestParseMicros(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		// integers
		{"0", 0, true},
		{"7", 7000, true},
		{"1666149715033200", 1666149715033200000, true},
		{"1694128201426556", 1694128201426556000, true},
		// 1..3 fractional digits are exact nanoseconds
		{"1.5", 1500, true},
		{"1.25", 1250, true},
		{"1.125", 1125, true},
		{"0.001", 1, true},
		{"1712195495406752.8", 1712195495406752800, true},
		{"1712195495406752.875", 1712195495406752875, true},
		{"1666149715033200.001", 1666149715033200001, true},
		{"1.", 1000, true},
		// the 4th digit rounds half up; later digits are ignored
		{"1.1234", 1123, true},
		{"1.1235", 1124, true},
		{"1.12349999", 1123, true},
		{"1.12351", 1124, true},
		{"1.9995", 2000, true},
		{"0.0004", 0, true},
		{"0.0005", 1, true},
		{"1712195495406752.8125", 1712195495406752813, true},
		// negative values
		{"-3", -3000, true},
		{"-1.5", -1500, true},
		{"-0.0005", -1, true},
		{"-1712195495406752.8", -1712195495406752800, true},
		// exponent forms go through strconv and round to the nanosecond
		{"1e3", 1000000, true},
		{"1E3", 1000000, true},
		{"1.5e3", 1500000, true},
		{"1.5e+3", 1500000, true},
		{"1.5E-3", 2, true},
		{"2e-3", 2, true},
		{"-2.5e2", -250000, true},
		{"1.712195495406752e15", 1712195495406752000, true},
		{"1.6661497150332e15", 1666149715033200000, true},
		{"1.7121954954067528e15", 1712195495406752800, true},
		{"17121954954067528e-1", 1712195495406752800, true},
		{"0.00000000000000000000000000000000000000000000000000001e50", 1, true}, // big exponent: strconv fallback
		// rejected
		{"", 0, false},
		{"-", 0, false},
		{".5", 500, true}, // strconv accepts a missing integer part
		{"abc", 0, false},
		{"1.2.3", 0, false},
		{"1-2", 0, false},
		{"1e400", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"12345678901234567", 0, false}, // 1.2e19 ns does not fit an int64
		// the largest whole part must not overflow when its fraction is added
		{"9223372036854775.808", 0, false},
		{"9223372036854775.999", 0, false},
		{"9000000000000000", 9000000000000000000, true},
	}
	for _, tc := range tests {
		got, ok := ParseMicros([]byte(tc.in))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("ParseMicros(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPlainDecimal(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"1e3", "1000", true},
		{"1.5e3", "1500", true},
		{"1.5E+3", "1500", true},
		{"-2.5e2", "-250", true},
		{"1.5e-3", "0.0015", true},
		{"15e-1", "1.5", true},
		{"15e-2", "0.15", true},
		{"1.712195495406752e15", "1712195495406752", true},
		{"1.7121954954067528e15", "1712195495406752.8", true},
		{"1.5", "", false},
		{"1e99", "", false},
		{"1ex", "", false},
		{"0x1e3p0", "", false},
	}
	for _, tc := range tests {
		got, ok := plainDecimal([]byte(tc.in))
		if ok != tc.ok || (ok && string(got) != tc.want) {
			t.Errorf("plainDecimal(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCursorMicros(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		next int // cursor index after the value
	}{
		{`12.5,`, 12500, 4},
		{`  12.5}`, 12500, 6},
		{"\n\t-3]", -3000, 4},
		{`"1712195495406752.8",`, 1712195495406752800, 20},
		{`" 7 "}`, 7000, 5},
		{`"1.5e3"}`, 1500000, 7},
		{`1666149715033200 `, 1666149715033200000, 16},
	}
	for _, tc := range tests {
		c := Cursor{B: []byte(tc.in)}
		var got int64
		if r := catch(func() { got = c.Micros() }); r != nil {
			t.Errorf("micros(%q) panicked: %v", tc.in, r)
			continue
		}
		if got != tc.want || c.I != tc.next {
			t.Errorf("micros(%q) = %d at %d; want %d at %d", tc.in, got, c.I, tc.want, tc.next)
		}
	}
	// bad values are syntax errors at the value's start
	for _, in := range []string{`"abc",`, ` null,`, `{}`, `"",`} {
		c := Cursor{B: []byte(in)}
		r := catch(func() { c.Micros() })
		se, ok := r.(*SyntaxError)
		if !ok {
			t.Errorf("micros(%q) panicked with %v; want a *SyntaxError", in, r)
			continue
		}
		if se.Want != "a number of microseconds" {
			t.Errorf("micros(%q): want %q", in, se.Want)
		}
		if in[se.At] == ' ' {
			t.Errorf("micros(%q): error at %d points at whitespace", in, se.At)
		}
	}
	// a number running to the end of the window asks for more input
	for _, in := range []string{`12.5`, `   `, `"12.5`, ``} {
		c := Cursor{B: []byte(in)}
		if r := catch(func() { c.Micros() }); r != ErrShort {
			t.Errorf("micros(%q) panicked with %v; want ErrShort", in, r)
		}
	}
}

func TestParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"42", 42, true},
		{"-42", -42, true},
		{"1.9", 1, true},
		{"-1.9", -1, true},
		{"1e3", 1000, true},
		{"2.5E2", 250, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"10159970886766084423", math.MaxInt64, true},
		{"99999999999999999999999999", math.MaxInt64, true},
		{"-10159970886766084423", -math.MaxInt64, true},
		{"9223372036854775808.0", math.MaxInt64, true},
		{"1e19", math.MaxInt64, true},
		{"1e400", math.MaxInt64, true},
		{"-1e400", math.MinInt64, true},
		{"", 0, false},
		{"-", 0, false},
		{"abc", 0, false},
		{"1x", 0, false},
		{"0x10", 0, false},
		{"1.5.5", 0, false},
	}
	for _, tc := range tests {
		got, ok := ParseInt([]byte(tc.in))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseIntString(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0x0", 0},
		{"0x1F", 31},
		{"0Xff", 255},
		{"0x7fffffffffffffff", math.MaxInt64},
		{"0xZZ", 0},
		{"0x", 0},
		{" 42 ", 42},
		{"-7", -7},
		{"3.9", 3},
		{"abc", 0},
		{"PyTorch Profiler", 0},
		{"", 0},
		{"10159970886766084423", math.MaxInt64},
	}
	for _, tc := range tests {
		if got := ParseIntString([]byte(tc.in)); got != tc.want {
			t.Errorf("ParseIntString(%q) = %d; want %d", tc.in, got, tc.want)
		}
	}
}

func TestCursorInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		next int
	}{
		{`"0x0",`, 0, 5},
		{`"0x10"}`, 16, 6},
		{`"PyTorch"`, 0, 9},
		{`3.7,`, 3, 3},
		{`-3.7,`, -3, 4},
		{` 10159970886766084423,`, math.MaxInt64, 21},
		{`1e19]`, math.MaxInt64, 4},
		{`"12"]`, 12, 4},
	}
	for _, tc := range tests {
		c := Cursor{B: []byte(tc.in)}
		var got int64
		if r := catch(func() { got = c.Int() }); r != nil {
			t.Errorf("int(%q) panicked: %v", tc.in, r)
			continue
		}
		if got != tc.want || c.I != tc.next {
			t.Errorf("int(%q) = %d at %d; want %d at %d", tc.in, got, c.I, tc.want, tc.next)
		}
	}
	for _, in := range []string{`null,`, `[1],`, `-,`, `x,`} {
		c := Cursor{B: []byte(in)}
		if _, ok := catch(func() { c.Int() }).(*SyntaxError); !ok {
			t.Errorf("int(%q) did not fail with a syntax error", in)
		}
	}
}

func TestStr(t *testing.T) {
	tests := []struct {
		in   string // a JSON string followed by more input
		raw  string // the body returned, escapes kept
		want string // the decoded value
	}{
		{`"abc",`, `abc`, "abc"},
		{`"",`, ``, ""},
		{` "a b"}`, `a b`, "a b"},
		{`"a\"b",`, `a\"b`, `a"b`},
		{`"a\\",`, `a\\`, `a\`},
		{`"\\",`, `\\`, `\`},
		{`"\\\\",`, `\\\\`, `\\`},
		{`"a\\\"b",`, `a\\\"b`, `a\"b`},
		{`"\"",`, `\"`, `"`},
		{`"\"\"x\"",`, `\"\"x\"`, `""x"`},
		{`"C:\\dir\\f.json",`, `C:\\dir\\f.json`, `C:\dir\f.json`},
		{`"tab\tnl\n\u00e9",`, `tab\tnl\n\u00e9`, "tab\tnl\né"},
	}
	for _, tc := range tests {
		c := Cursor{B: []byte(tc.in)}
		var raw []byte
		if r := catch(func() { raw = c.Str() }); r != nil {
			t.Errorf("str(%q) panicked: %v", tc.in, r)
			continue
		}
		if string(raw) != tc.raw {
			t.Errorf("str(%q) = %q; want %q", tc.in, raw, tc.raw)
		}
		if c.I != len(tc.in)-1 {
			t.Errorf("str(%q) stopped at %d; want %d", tc.in, c.I, len(tc.in)-1)
		}
		if got := Unescape(raw); got != tc.want {
			t.Errorf("Unescape(%q) = %q; want %q", raw, got, tc.want)
		}
		if got := Text(raw); got != tc.want {
			t.Errorf("Text(%q) = %q; want %q", raw, got, tc.want)
		}
		// the decoded value agrees with encoding/json
		var std string
		if err := json.Unmarshal([]byte(tc.in[:len(tc.in)-1]), &std); err != nil || std != tc.want {
			t.Errorf("encoding/json reads %q as %q (%v); want %q", tc.in, std, err, tc.want)
		}
	}
	// unterminated strings ask for more input
	for _, in := range []string{`"abc`, `"a\"`, `"a\\\"`, `"`, ` `} {
		c := Cursor{B: []byte(in)}
		if r := catch(func() { c.Str() }); r != ErrShort {
			t.Errorf("str(%q) panicked with %v; want ErrShort", in, r)
		}
	}
	// a value of another type is a syntax error where it starts
	c := Cursor{B: []byte(`  12,`)}
	r := catch(func() { c.Str() })
	if se, ok := r.(*SyntaxError); !ok || se.At != 2 || se.Want != "a string" {
		t.Errorf("str on a number panicked with %#v; want SyntaxError at 2", r)
	}
}

func TestUnescapeInvalid(t *testing.T) {
	// an escape encoding/json refuses is kept as it is
	if got := Unescape([]byte(`a\qb`)); got != `a\qb` {
		t.Errorf("Unescape(invalid) = %q", got)
	}
	if got := Text([]byte(`plain`)); got != "plain" {
		t.Errorf("Text(plain) = %q", got)
	}
}

func TestFloat(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{
		{`1.5,`, 1.5},
		{`-0.25,`, -0.25},
		{`100}`, 100},
		{`1e2,`, 100},
		{`"2.5",`, 2.5},
		{`"x",`, 0},
		{`1234567890123456789,`, 1234567890123456789},
		{`0.000001,`, 0.000001},
	}
	for _, tc := range tests {
		c := Cursor{B: []byte(tc.in)}
		var got float64
		if r := catch(func() { got = c.Float() }); r != nil {
			t.Errorf("float(%q) panicked: %v", tc.in, r)
			continue
		}
		if got != tc.want {
			t.Errorf("float(%q) = %v; want %v", tc.in, got, tc.want)
		}
		if c.B[c.I] != ',' && c.B[c.I] != '}' {
			t.Errorf("float(%q) stopped at %d", tc.in, c.I)
		}
	}
	for _, in := range []string{`null,`, `--1,`, `.,`} {
		c := Cursor{B: []byte(in)}
		r := catch(func() { c.Float() })
		if se, ok := r.(*SyntaxError); !ok || se.At != 0 {
			t.Errorf("float(%q) panicked with %#v; want a SyntaxError at 0", in, r)
		}
	}
}

func TestFastFloat(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true},
		{"12.5", 12.5, true},
		{"-12.5", -12.5, true},
		{"123456789012345", 123456789012345, true},
		{"1234567890123456", 0, false}, // 16 digits: left to strconv
		{"1e5", 0, false},
		{"1.2.3", 0, false},
		{"", 0, false},
		{"-", 0, false},
	}
	for _, tc := range tests {
		got, ok := fastFloat([]byte(tc.in))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("fastFloat(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestSkip(t *testing.T) {
	tests := []string{
		`"s"`,
		`"with \" quote and ] } brackets"`,
		`123`,
		`-1.5e3`,
		`true`,
		`false`,
		`null`,
		`{}`,
		`[]`,
		`{"a":[1,{"b":"}]"}],"c":null}`,
		`[[[]],{"x":{"y":["\\"]}}]`,
	}
	for _, v := range tests {
		in := " " + v + ` ,"next"`
		c := Cursor{B: []byte(in)}
		if r := catch(func() { c.Skip() }); r != nil {
			t.Errorf("skip(%q) panicked: %v", v, r)
			continue
		}
		if want := 1 + len(v); c.I != want {
			t.Errorf("skip(%q) stopped at %d; want %d", v, c.I, want)
		}
		c = Cursor{B: []byte(in)}
		if got := string(c.Raw()); got != v {
			t.Errorf("raw(%q) = %q", v, got)
		}
	}
	for _, in := range []string{`{"a":1`, `[1,2`, `"abc`, `tru`, `nul`, `{"a":"}`} {
		c := Cursor{B: []byte(in)}
		if r := catch(func() { c.Skip() }); r != ErrShort {
			t.Errorf("skip(%q) panicked with %v; want ErrShort", in, r)
		}
	}
	for _, in := range []string{`nope,`, `truth,`, `@`, `}`} {
		c := Cursor{B: []byte(in)}
		if _, ok := catch(func() { c.Skip() }).(*SyntaxError); !ok {
			t.Errorf("skip(%q) did not fail with a syntax error", in)
		}
	}
}

func TestWhitespaceAndExpect(t *testing.T) {
	c := Cursor{B: []byte(" \t\r\n:x")}
	if r := catch(func() { c.Expect(':', "colon") }); r != nil || c.I != 5 {
		t.Fatalf("expect: %v at %d", r, c.I)
	}
	r := catch(func() { c.Expect(':', "colon") })
	if se, ok := r.(*SyntaxError); !ok || se.At != 5 || se.Want != "colon" {
		t.Errorf("expect mismatch = %#v", r)
	}
	// control characters other than JSON whitespace are not skipped
	c = Cursor{B: []byte("\x00a")}
	if ch := c.WS(); ch != 0 || c.I != 0 {
		t.Errorf("ws skipped a NUL: %q at %d", ch, c.I)
	}
	c = Cursor{B: []byte("  ")}
	if r := catch(func() { c.WS() }); r != ErrShort {
		t.Errorf("ws at end panicked with %v; want ErrShort", r)
	}
	if r := catch(func() { c.Peek() }); r != ErrShort {
		t.Errorf("peek at end panicked with %v; want ErrShort", r)
	}
}

func TestFastPathsAgreeWithParsers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		whole := rng.Int64N(1 << 52)
		if rng.IntN(4) == 0 {
			whole = rng.Int64N(1000)
		}
		tok := strconv.FormatInt(whole, 10)
		if rng.IntN(2) == 0 {
			frac := strconv.FormatInt(rng.Int64N(1_000_000_000), 10)
			tok += "." + frac[:1+rng.IntN(len(frac))]
		}
		for _, term := range []string{",", "}", " ", "\n"} {
			c := Cursor{B: []byte(tok + term)}
			got := c.Micros()
			want, ok := ParseMicros([]byte(tok))
			if !ok || got != want || c.I != len(tok) {
				t.Fatalf("micros(%q) = %d at %d, parseMicros = %d %v", tok, got, c.I, want, ok)
			}
			if !strings.Contains(tok, ".") {
				c = Cursor{B: []byte(tok + term)}
				if got, want := c.Int(), whole; got != want || c.I != len(tok) {
					t.Fatalf("int(%q) = %d, want %d", tok, got, want)
				}
			}
		}
	}
}
