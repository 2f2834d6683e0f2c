package script

import (
	"strconv"
	"strings"
)

// Integer arithmetic of $(( )) and (( )): the usual C operators over
// int64. A name reads a variable whose value is itself evaluated; an unset
// or unknown variable makes the whole result unknown rather than 0, since
// the environment may well set it.

const maxArithDepth = 32

func (it *interp) arith(expr string) (int64, bool) {
	if it.arithDepth >= maxArithDepth || len(expr) > 4096 {
		return 0, false
	}
	it.arithDepth++
	defer func() { it.arithDepth-- }()
	if strings.ContainsAny(expr, "$`") {
		s, ok := it.expandString(lexOperand(expr))
		if !ok {
			return 0, false
		}
		expr = s
	}
	a := &arithParser{it: it, s: expr}
	a.next()
	v, ok := a.comma()
	if !ok || a.tok != "" {
		return 0, false
	}
	return v, true
}

type arithParser struct {
	it  *interp
	s   string
	pos int
	tok string // current token; "" at the end
}

var arithOps = []string{"<<=", ">>=", "**", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
	"+", "-", "*", "/", "%", "<", ">", "=", "!", "~", "&", "|", "^", "?", ":", "(", ")", ","}

func (a *arithParser) next() {
	for a.pos < len(a.s) && strings.IndexByte(" \t\n\r", a.s[a.pos]) >= 0 {
		a.pos++
	}
	if a.pos >= len(a.s) {
		a.tok = ""
		return
	}
	c := a.s[a.pos]
	if isNameChar(c) || c == '#' {
		i := a.pos
		for i < len(a.s) && (isNameChar(a.s[i]) || a.s[i] == '#') {
			i++
		}
		a.tok, a.pos = a.s[a.pos:i], i
		return
	}
	for _, op := range arithOps {
		if strings.HasPrefix(a.s[a.pos:], op) {
			a.tok = op
			a.pos += len(op)
			return
		}
	}
	a.tok = "\x00" // a character arithmetic does not know: fails the parse
	a.pos = len(a.s)
}

func (a *arithParser) comma() (int64, bool) {
	v, ok := a.assign()
	for ok && a.tok == "," {
		a.next()
		v, ok = a.assign()
	}
	return v, ok
}

func (a *arithParser) assign() (int64, bool) {
	if isName(a.tok) {
		save, saveTok := a.pos, a.tok
		name := a.tok
		a.next()
		switch op := a.tok; op {
		case "=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=":
			a.next()
			rhs, ok := a.assign()
			if !ok {
				return 0, false
			}
			if op != "=" {
				cur, ok := a.variable(name)
				if !ok {
					return 0, false
				}
				if rhs, ok = binop(strings.TrimSuffix(op, "="), cur, rhs); !ok {
					return 0, false
				}
			}
			a.it.setVar(name, strconv.FormatInt(rhs, 10), true)
			return rhs, true
		}
		a.pos, a.tok = save, saveTok
	}
	return a.ternary()
}

func (a *arithParser) ternary() (int64, bool) {
	c, ok := a.binary(0)
	if !ok || a.tok != "?" {
		return c, ok
	}
	a.next()
	x, ok1 := a.assign()
	if a.tok != ":" {
		return 0, false
	}
	a.next()
	y, ok2 := a.assign()
	if !ok1 || !ok2 {
		return 0, false
	}
	if c != 0 {
		return x, true
	}
	return y, true
}

var arithPrec = [][]string{{"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<", "<=", ">", ">="}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"}}

func (a *arithParser) binary(level int) (int64, bool) {
	if level == len(arithPrec) {
		return a.power()
	}
	x, ok := a.binary(level + 1)
	for ok {
		op := ""
		for _, o := range arithPrec[level] {
			if a.tok == o {
				op = o
			}
		}
		if op == "" {
			break
		}
		a.next()
		var y int64
		if y, ok = a.binary(level + 1); ok {
			x, ok = binop(op, x, y)
		}
	}
	return x, ok
}

func (a *arithParser) power() (int64, bool) {
	x, ok := a.unary()
	if !ok || a.tok != "**" {
		return x, ok
	}
	a.next()
	y, ok := a.power()
	if !ok {
		return 0, false
	}
	return binop("**", x, y)
}

func (a *arithParser) unary() (int64, bool) {
	switch op := a.tok; op {
	case "+", "-", "!", "~":
		a.next()
		v, ok := a.unary()
		switch op {
		case "-":
			v = -v
		case "!":
			v = int64(b2i(v == 0))
		case "~":
			v = ^v
		}
		return v, ok
	case "++", "--":
		a.next()
		name := a.tok
		if !isName(name) {
			return 0, false
		}
		a.next()
		v, ok := a.variable(name)
		if !ok {
			return 0, false
		}
		v += map[string]int64{"++": 1, "--": -1}[op]
		a.it.setVar(name, strconv.FormatInt(v, 10), true)
		return v, true
	}
	return a.postfix()
}

func (a *arithParser) postfix() (int64, bool) {
	if a.tok == "(" {
		a.next()
		v, ok := a.comma()
		if a.tok != ")" {
			return 0, false
		}
		a.next()
		return v, ok
	}
	t := a.tok
	if t == "" || t == "\x00" {
		return 0, false
	}
	a.next()
	if isDigit(t[0]) {
		return parseArithInt(t)
	}
	if !isName(t) {
		return 0, false
	}
	v, ok := a.variable(t)
	if ok && (a.tok == "++" || a.tok == "--") {
		a.it.setVar(t, strconv.FormatInt(v+map[string]int64{"++": 1, "--": -1}[a.tok], 10), true)
		a.next()
	}
	return v, ok
}

func (a *arithParser) variable(name string) (int64, bool) {
	v := a.it.lookup(name)
	if !v.set || !v.known {
		return 0, false
	}
	if strings.TrimSpace(v.val) == "" {
		return 0, true
	}
	return a.it.arith(v.val)
}

// parseArithInt reads 42, 0x2A, 052 or base#digits.
func parseArithInt(t string) (int64, bool) {
	if b, digits, ok := strings.Cut(t, "#"); ok {
		base, err := strconv.Atoi(b)
		if err != nil || base < 2 || base > 36 {
			return 0, false
		}
		v, err := strconv.ParseInt(digits, base, 64)
		return v, err == nil
	}
	v, err := strconv.ParseInt(t, 0, 64)
	return v, err == nil
}

func binop(op string, x, y int64) (int64, bool) {
	switch op {
	case "+":
		return x + y, true
	case "-":
		return x - y, true
	case "*":
		return x * y, true
	case "/", "%":
		if y == 0 || x == -1<<63 && y == -1 {
			return 0, false
		}
		if op == "/" {
			return x / y, true
		}
		return x % y, true
	case "**":
		if y < 0 {
			return 0, false
		}
		r := int64(1)
		for y > 0 { // by squaring: a huge exponent costs 63 rounds at most
			if y&1 == 1 {
				r *= x
			}
			x *= x
			y >>= 1
		}
		return r, true
	case "<<":
		return x << (uint64(y) & 63), true
	case ">>":
		return x >> (uint64(y) & 63), true
	case "&":
		return x & y, true
	case "|":
		return x | y, true
	case "^":
		return x ^ y, true
	case "&&":
		return int64(b2i(x != 0 && y != 0)), true
	case "||":
		return int64(b2i(x != 0 || y != 0)), true
	case "==":
		return int64(b2i(x == y)), true
	case "!=":
		return int64(b2i(x != y)), true
	case "<":
		return int64(b2i(x < y)), true
	case "<=":
		return int64(b2i(x <= y)), true
	case ">":
		return int64(b2i(x > y)), true
	case ">=":
		return int64(b2i(x >= y)), true
	}
	return 0, false
}
