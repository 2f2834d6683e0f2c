package script

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Integer arithmetic of $(( )) and (( )), as bash does it over int64. A
// name reads a variable whose value is itself evaluated; an unset or
// unknown variable makes the whole result unknown rather than 0, since the
// environment may well set it.
//
// An expression holding $ or ` is expanded as text first and read again,
// as bash does: X="1+2"; $(( $X * 3 )) is 7, not 9.

const (
	maxArithDepth = 32
	maxArithText  = 4096 // an expression longer than this is not evaluated
)

// arithNode evaluates an expression parsed as part of the current source.
func (it *interp) arithNode(x syntax.ArithmExpr) (int64, bool) {
	if x == nil {
		return 0, false
	}
	return it.arith(x, it.cur.slice(x.Pos(), x.End()))
}

// arith evaluates x, whose text is text; a nil x is read from text.
func (it *interp) arith(x syntax.ArithmExpr, text string) (int64, bool) {
	if it.arithDepth >= maxArithDepth || len(text) > maxArithText {
		return 0, false
	}
	it.arithDepth++
	defer func() { it.arithDepth-- }()
	if strings.ContainsAny(text, "$`") {
		s, ok := it.expandText(text)
		if !ok || strings.ContainsAny(s, "$`") {
			return 0, false
		}
		text, x = s, nil
	}
	if x == nil {
		var ok bool
		if x, ok = parseSnippet(&it.snippets, text, (*syntax.Parser).Arithmetic); !ok || x == nil {
			return 0, false
		}
	}
	return it.eval(x)
}

// expandText expands $ and ` references in text, blanks and all, as one
// word.
func (it *interp) expandText(text string) (string, bool) {
	w, ok := parseSnippet(&it.snippets, text, (*syntax.Parser).Document)
	if !ok {
		return "", false
	}
	saved := it.cur
	it.cur = &source{file: saved.file, src: []byte(text), lineBase: max(it.line-1, 0)}
	defer func() { it.cur = saved }()
	return it.expandString(w)
}

func (it *interp) eval(x syntax.ArithmExpr) (int64, bool) {
	switch x := x.(type) {
	case *syntax.Word:
		t, ok := lit(x)
		switch {
		case !ok || t == "":
			return 0, false
		case isDigit(t[0]):
			return parseArithInt(t)
		case isName(t):
			return it.variable(t)
		}
	case *syntax.ParenArithm:
		return it.eval(x.X)
	case *syntax.UnaryArithm:
		return it.unary(x)
	case *syntax.BinaryArithm:
		return it.binary(x)
	}
	return 0, false
}

func (it *interp) unary(x *syntax.UnaryArithm) (int64, bool) {
	switch x.Op {
	case syntax.Inc, syntax.Dec:
		name, ok := arithName(x.X)
		if !ok {
			return 0, false
		}
		v, ok := it.variable(name)
		if !ok {
			return 0, false
		}
		n := v + 1
		if x.Op == syntax.Dec {
			n = v - 1
		}
		it.setVar(name, strconv.FormatInt(n, 10), true)
		if x.Post {
			return v, true
		}
		return n, true
	}
	v, ok := it.eval(x.X)
	switch x.Op {
	case syntax.Minus:
		v = -v
	case syntax.Not:
		v = int64(b2i(v == 0))
	case syntax.BitNegation:
		v = ^v
	case syntax.Plus:
	default:
		return 0, false
	}
	return v, ok
}

// assignOps maps an assignment operator to the operator it applies.
var assignOps = map[syntax.BinAritOperator]string{
	syntax.Assgn: "", syntax.AddAssgn: "+", syntax.SubAssgn: "-", syntax.MulAssgn: "*", syntax.QuoAssgn: "/",
	syntax.RemAssgn: "%", syntax.ShlAssgn: "<<", syntax.ShrAssgn: ">>", syntax.AndAssgn: "&",
	syntax.OrAssgn: "|", syntax.XorAssgn: "^",
}

func (it *interp) binary(x *syntax.BinaryArithm) (int64, bool) {
	if op, ok := assignOps[x.Op]; ok {
		name, ok := arithName(x.X)
		if !ok {
			return 0, false
		}
		rhs, ok := it.eval(x.Y)
		if !ok {
			return 0, false
		}
		if op != "" {
			cur, ok := it.variable(name)
			if !ok {
				return 0, false
			}
			if rhs, ok = binop(op, cur, rhs); !ok {
				return 0, false
			}
		}
		it.setVar(name, strconv.FormatInt(rhs, 10), true)
		return rhs, true
	}
	c, ok := it.eval(x.X)
	if !ok {
		return 0, false
	}
	switch x.Op {
	case syntax.TernQuest:
		// both branches are evaluated, as before: either may assign
		alt, isAlt := x.Y.(*syntax.BinaryArithm)
		if !isAlt || alt.Op != syntax.TernColon {
			return 0, false
		}
		a, ok1 := it.eval(alt.X)
		b, ok2 := it.eval(alt.Y)
		if !ok1 || !ok2 {
			return 0, false
		}
		if c != 0 {
			return a, true
		}
		return b, true
	case syntax.Comma:
		return it.eval(x.Y)
	}
	y, ok := it.eval(x.Y)
	if !ok {
		return 0, false
	}
	return binop(x.Op.String(), c, y)
}

// arithName is the variable an assignment or ++ / -- names.
func arithName(x syntax.ArithmExpr) (string, bool) {
	w, ok := x.(*syntax.Word)
	if !ok {
		return "", false
	}
	t, ok := lit(w)
	return t, ok && isName(t)
}

func (it *interp) variable(name string) (int64, bool) {
	v := it.lookup(name)
	if !v.set || !v.known {
		return 0, false
	}
	if strings.TrimSpace(v.val) == "" {
		return 0, true
	}
	return it.arith(nil, v.val)
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
