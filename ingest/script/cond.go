package script

import (
	"regexp"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Branch conditions are evaluated three-valued: a test over known values
// is true or false; anything that depends on an unknown value, the file
// system or a command's exit status is unknown.

func tnot(t Taken) Taken {
	switch t {
	case TakenYes:
		return TakenNo
	case TakenNo:
		return TakenYes
	}
	return TakenUnknown
}

func tand(a, b Taken) Taken {
	if a == TakenNo || b == TakenNo {
		return TakenNo
	}
	if a == TakenYes && b == TakenYes {
		return TakenYes
	}
	return TakenUnknown
}

func tor(a, b Taken) Taken { return tnot(tand(tnot(a), tnot(b))) }

func tbool(b bool) Taken {
	if b {
		return TakenYes
	}
	return TakenNo
}

// cond is the status of a condition list: its last command's.
func (it *interp) cond(stmts []*syntax.Stmt) Taken {
	if len(stmts) == 0 {
		return TakenUnknown
	}
	return it.status(stmts[len(stmts)-1], false)
}

// status is whether a statement succeeds. assumeOK treats a plain command
// as succeeding: `cd dir && python train.py` runs python.
func (it *interp) status(st *syntax.Stmt, assumeOK bool) Taken {
	if st == nil {
		return TakenUnknown
	}
	t := it.cmdStatus(st.Cmd, assumeOK)
	if st.Negated {
		t = tnot(t)
	}
	return t
}

func (it *interp) cmdStatus(c syntax.Command, assumeOK bool) Taken {
	switch c := c.(type) {
	case *syntax.CallExpr:
		if len(c.Args) == 0 {
			return TakenYes
		}
		switch name, _ := lit(c.Args[0]); name {
		case "[", "test":
			args := it.expandArgs(c.Args[1:])
			if name == "[" {
				if len(args) == 0 || args[len(args)-1].text != "]" {
					return TakenUnknown
				}
				args = args[:len(args)-1]
			}
			t := &tester{it: it, args: args}
			r := t.or()
			if t.i != len(args) {
				return TakenUnknown
			}
			return r
		case "true", ":":
			return TakenYes
		case "false", "exit", "return":
			return TakenNo
		}
	case *syntax.TestClause:
		return it.dtest(c.X)
	case *syntax.BinaryCmd:
		items, ops := chain(c)
		if !isAndOr(c.Op) { // a pipeline: the last command's status
			return it.status(items[len(items)-1], assumeOK)
		}
		st := it.status(items[0], assumeOK)
		for i, op := range ops {
			next := it.status(items[i+1], assumeOK)
			if op == syntax.AndStmt {
				st = tand(st, next)
			} else {
				st = tor(st, next)
			}
		}
		return st
	case *syntax.ArithmCmd:
		if v, ok := it.arith(c.X, it.cur.inner(c.Left, 2, c.Right)); ok {
			return tbool(v != 0)
		}
		return TakenUnknown
	case *syntax.Block:
		if len(c.Stmts) > 0 {
			return it.status(c.Stmts[len(c.Stmts)-1], assumeOK)
		}
		return TakenUnknown
	case *syntax.Subshell:
		if len(c.Stmts) > 0 {
			return it.status(c.Stmts[len(c.Stmts)-1], assumeOK)
		}
		return TakenUnknown
	case *syntax.TimeClause:
		return it.status(c.Stmt, assumeOK)
	case *syntax.DeclClause, *syntax.LetClause:
	default:
		return TakenUnknown
	}
	if assumeOK {
		return TakenYes
	}
	return TakenUnknown
}

// chain flattens a && b || c (ops between the items) or a | b | c (no
// ops) into its statements, without recursion: the parser builds a long
// chain as a deep tree.
func chain(c *syntax.BinaryCmd) (items []*syntax.Stmt, ops []syntax.BinCmdOperator) {
	andOr := isAndOr(c.Op)
	type entry struct {
		st   *syntax.Stmt
		op   syntax.BinCmdOperator
		isOp bool
	}
	stack := []entry{{st: c.Y}, {op: c.Op, isOp: true}, {st: c.X}}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if e.isOp {
			if andOr {
				ops = append(ops, e.op)
			}
			continue
		}
		if e.st != nil && !e.st.Negated && len(e.st.Redirs) == 0 {
			if b, ok := e.st.Cmd.(*syntax.BinaryCmd); ok && isAndOr(b.Op) == andOr {
				stack = append(stack, entry{st: b.Y}, entry{op: b.Op, isOp: true}, entry{st: b.X})
				continue
			}
		}
		items = append(items, e.st)
	}
	return items, ops
}

func isAndOr(op syntax.BinCmdOperator) bool { return op == syntax.AndStmt || op == syntax.OrStmt }

func (it *interp) expandArgs(ws []*syntax.Word) []field {
	var out []field
	for _, w := range ws {
		out = append(out, it.expandWord(w, nil, true)...)
	}
	return out
}

// tester evaluates the arguments of [ ] / test.
type tester struct {
	it   *interp
	args []field
	i    int
}

func (t *tester) peek(k int) (field, bool) {
	if t.i+k < len(t.args) {
		return t.args[t.i+k], true
	}
	return field{}, false
}

func (t *tester) or() Taken {
	r := t.and()
	for f, ok := t.peek(0); ok && f.text == "-o"; f, ok = t.peek(0) {
		t.i++
		r = tor(r, t.and())
	}
	return r
}

func (t *tester) and() Taken {
	r := t.not()
	for f, ok := t.peek(0); ok && f.text == "-a"; f, ok = t.peek(0) {
		t.i++
		r = tand(r, t.not())
	}
	return r
}

func (t *tester) not() Taken {
	if f, ok := t.peek(0); ok && f.text == "!" {
		t.i++
		return tnot(t.not())
	}
	return t.primary()
}

func (t *tester) primary() Taken {
	a, ok := t.peek(0)
	if !ok {
		return TakenNo
	}
	if a.text == "(" {
		t.i++
		r := t.or()
		if f, ok := t.peek(0); ok && f.text == ")" {
			t.i++
		}
		return r
	}
	if op, ok := t.peek(1); ok && isBinaryTest(op.text) {
		b, _ := t.peek(2)
		t.i += 3
		if !a.known || !b.known {
			return TakenUnknown
		}
		return binaryTest(op.text, a.text, b.text, false)
	}
	if b, ok := t.peek(1); ok && strings.HasPrefix(a.text, "-") && len(a.text) == 2 {
		t.i += 2
		return unaryTest(a.text, b)
	}
	t.i++
	if !a.known {
		return TakenUnknown
	}
	return tbool(a.text != "")
}

func isBinaryTest(op string) bool {
	switch op {
	case "=", "==", "!=", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "<", ">", "=~", "-nt", "-ot", "-ef":
		return true
	}
	return false
}

func unaryTest(op string, f field) Taken {
	if !f.known {
		return TakenUnknown
	}
	switch op {
	case "-z":
		return tbool(f.text == "")
	case "-n":
		return tbool(f.text != "")
	}
	return TakenUnknown // file tests: the parser does not look at the file system
}

func binaryTest(op, a, b string, glob bool) Taken {
	switch op {
	case "=", "==":
		if glob {
			return tbool(globMatch(b, a))
		}
		return tbool(a == b)
	case "!=":
		if glob {
			return tbool(!globMatch(b, a))
		}
		return tbool(a != b)
	case "<":
		return tbool(a < b)
	case ">":
		return tbool(a > b)
	case "=~":
		re, err := regexp.Compile(b)
		if err != nil {
			return TakenUnknown
		}
		return tbool(re.MatchString(a))
	case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
		x, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
		y, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
		if err1 != nil || err2 != nil {
			return TakenUnknown
		}
		return tbool(map[string]bool{"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y, "-gt": x > y, "-ge": x >= y}[op])
	}
	return TakenUnknown
}

// dtest evaluates [[ ... ]]: no word splitting, && || ! ( ) inside, and a
// right-hand side of == that is a glob pattern unless quoted. mvdan nests
// a && b || c as a && (b || c) and ! a && b as !(a && b); bash binds !
// tightest and && before ||, so the chain is flattened and read again with
// bash's precedence.
func (it *interp) dtest(x syntax.TestExpr) Taken {
	d := &dtester{it: it}
	d.flatten(x)
	r := d.or()
	if d.i != len(d.toks) {
		return TakenUnknown
	}
	return r
}

// testTok is one token of a flattened [[ ]]: an operand, ! or && / ||.
type testTok struct {
	x   syntax.TestExpr // an operand; nil for an operator
	not bool
	op  syntax.BinTestOperator
}

type dtester struct {
	it   *interp
	toks []testTok
	i    int
}

func (d *dtester) flatten(x syntax.TestExpr) {
	switch x := x.(type) {
	case *syntax.BinaryTest:
		if x.Op == syntax.AndTest || x.Op == syntax.OrTest {
			d.flatten(x.X)
			d.toks = append(d.toks, testTok{op: x.Op})
			d.flatten(x.Y)
			return
		}
	case *syntax.UnaryTest:
		if x.Op == syntax.TsNot {
			d.toks = append(d.toks, testTok{not: true})
			d.flatten(x.X)
			return
		}
	}
	d.toks = append(d.toks, testTok{x: x})
}

func (d *dtester) is(op syntax.BinTestOperator) bool {
	return d.i < len(d.toks) && d.toks[d.i].x == nil && !d.toks[d.i].not && d.toks[d.i].op == op
}

// or, and, not: every operand is evaluated, as ${X:=v} in one assigns.
func (d *dtester) or() Taken {
	r := d.and()
	for d.is(syntax.OrTest) {
		d.i++
		r = tor(r, d.and())
	}
	return r
}

func (d *dtester) and() Taken {
	r := d.not()
	for d.is(syntax.AndTest) {
		d.i++
		r = tand(r, d.not())
	}
	return r
}

func (d *dtester) not() Taken {
	if d.i < len(d.toks) && d.toks[d.i].not {
		d.i++
		return tnot(d.not())
	}
	if d.i >= len(d.toks) || d.toks[d.i].x == nil {
		return TakenUnknown
	}
	d.i++
	return d.it.testOperand(d.toks[d.i-1].x)
}

// testOperand evaluates one operand of [[ ]]: a word, a unary or binary
// test, or a parenthesised expression.
func (it *interp) testOperand(x syntax.TestExpr) Taken {
	switch x := x.(type) {
	case *syntax.Word:
		s, ok := it.expandString(x)
		if !ok {
			return TakenUnknown
		}
		return tbool(s != "")
	case *syntax.ParenTest:
		return it.dtest(x.X)
	case *syntax.UnaryTest:
		w, ok := x.X.(*syntax.Word)
		if !ok {
			return TakenUnknown
		}
		s, known := it.expandString(w)
		return unaryTest(x.Op.String(), field{text: s, known: known})
	case *syntax.BinaryTest:
		lw, ok1 := x.X.(*syntax.Word)
		rw, ok2 := x.Y.(*syntax.Word)
		if !ok1 || !ok2 {
			return TakenUnknown
		}
		a, ok := it.expandString(lw)
		if !ok {
			return TakenUnknown
		}
		op := x.Op.String()
		if op == "==" || op == "=" || op == "!=" {
			pat, ok := it.pattern(rw)
			if !ok {
				return TakenUnknown
			}
			return binaryTest(op, a, pat, true)
		}
		b, ok := it.expandString(rw)
		if !ok {
			return TakenUnknown
		}
		return binaryTest(op, a, b, false)
	}
	return TakenUnknown
}

// pattern expands a word used as a glob pattern: quoted and expanded
// parts match literally.
func (it *interp) pattern(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
			continue
		}
		s, ok := it.expandString(&syntax.Word{Parts: []syntax.WordPart{p}})
		if !ok {
			return "", false
		}
		for _, r := range s {
			if strings.ContainsRune(`*?[]\`, r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
	}
	return b.String(), true
}

// globMatch matches s against a bash glob: * ? [...] [!...] and \ escapes.
func globMatch(pat, s string) bool {
	px, sx := 0, 0
	starP, starS := -1, 0
	for sx < len(s) {
		if px < len(pat) {
			switch pat[px] {
			case '*':
				starP, starS = px, sx
				px++
				continue
			case '?':
				px++
				sx++
				continue
			case '[':
				if n, ok, valid := matchClass(pat[px:], s[sx]); valid {
					if ok {
						px += n
						sx++
						continue
					}
					break
				}
				if s[sx] == '[' {
					px++
					sx++
					continue
				}
			case '\\':
				if px+1 < len(pat) && pat[px+1] == s[sx] {
					px += 2
					sx++
					continue
				}
			default:
				if pat[px] == s[sx] {
					px++
					sx++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		px, sx = starP+1, starS
	}
	for px < len(pat) && pat[px] == '*' {
		px++
	}
	return px == len(pat)
}

// matchClass matches one byte against [...] at the start of pat; n is the
// class's length, valid is false when the class is not closed.
func matchClass(pat string, c byte) (n int, ok, valid bool) {
	i := 1
	neg := i < len(pat) && (pat[i] == '!' || pat[i] == '^')
	if neg {
		i++
	}
	first := true
	for i < len(pat) {
		if pat[i] == ']' && !first {
			return i + 1, ok != neg, true
		}
		first = false
		lo := pat[i]
		if lo == '\\' && i+1 < len(pat) {
			i++
			lo = pat[i]
		}
		hi := lo
		if i+2 < len(pat) && pat[i+1] == '-' && pat[i+2] != ']' {
			hi = pat[i+2]
			i += 2
		}
		if lo <= c && c <= hi {
			ok = true
		}
		i++
	}
	return 0, false, false
}
