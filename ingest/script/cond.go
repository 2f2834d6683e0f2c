package script

import (
	"regexp"
	"strconv"
	"strings"
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
func (it *interp) cond(nodes []node) Taken {
	if len(nodes) == 0 {
		return TakenUnknown
	}
	return it.status(nodes[len(nodes)-1], false)
}

// status is whether a command succeeds. assumeOK treats a plain command as
// succeeding: `cd dir && python train.py` runs python.
func (it *interp) status(n node, assumeOK bool) Taken {
	switch n := n.(type) {
	case *simpleCmd:
		if len(n.words) == 0 {
			return TakenYes
		}
		name, _ := n.words[0].lit()
		switch name {
		case "[", "test":
			args := it.expandArgs(n.words[1:])
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
		case "[[":
			return it.dtest(n.words[1:])
		case "true", ":":
			return TakenYes
		case "false", "exit", "return":
			return TakenNo
		}
		if assumeOK {
			return TakenYes
		}
		return TakenUnknown
	case *andOrNode:
		st := it.status(n.items[0], assumeOK)
		for i, op := range n.ops {
			next := it.status(n.items[i+1], assumeOK)
			if op == "&&" {
				st = tand(st, next)
			} else {
				st = tor(st, next)
			}
		}
		return st
	case *pipeNode:
		st := it.status(n.cmds[len(n.cmds)-1], assumeOK)
		if n.neg {
			st = tnot(st)
		}
		return st
	case *arithNode:
		if v, ok := it.arith(n.expr); ok {
			return tbool(v != 0)
		}
	case *groupNode:
		if len(n.body) > 0 {
			return it.status(n.body[len(n.body)-1], assumeOK)
		}
	}
	return TakenUnknown
}

func (it *interp) expandArgs(ws []*word) []field {
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
// right-hand side of == that is a glob pattern unless quoted.
func (it *interp) dtest(ws []*word) Taken {
	if len(ws) == 0 {
		return TakenUnknown
	}
	if s, _ := ws[len(ws)-1].lit(); s == "]]" {
		ws = ws[:len(ws)-1]
	}
	d := &dtester{it: it, ws: ws}
	r := d.or()
	if d.i != len(ws) {
		return TakenUnknown
	}
	return r
}

type dtester struct {
	it *interp
	ws []*word
	i  int
}

func (d *dtester) lit(k int) string {
	if d.i+k < len(d.ws) {
		s, _ := d.ws[d.i+k].lit()
		return s
	}
	return "\x00"
}

func (d *dtester) or() Taken {
	r := d.and()
	for d.lit(0) == "||" {
		d.i++
		r = tor(r, d.and())
	}
	return r
}

func (d *dtester) and() Taken {
	r := d.not()
	for d.lit(0) == "&&" {
		d.i++
		r = tand(r, d.not())
	}
	return r
}

func (d *dtester) not() Taken {
	if d.lit(0) == "!" {
		d.i++
		return tnot(d.not())
	}
	return d.primary()
}

func (d *dtester) primary() Taken {
	if d.i >= len(d.ws) {
		return TakenUnknown
	}
	if d.lit(0) == "(" {
		d.i++
		r := d.or()
		if d.lit(0) == ")" {
			d.i++
		}
		return r
	}
	if op := d.lit(1); isBinaryTest(op) && d.i+2 < len(d.ws) {
		a, aok := d.it.expandString(d.ws[d.i])
		rhs := d.ws[d.i+2]
		d.i += 3
		if !aok {
			return TakenUnknown
		}
		if op == "==" || op == "=" || op == "!=" {
			pat, ok := d.it.pattern(rhs)
			if !ok {
				return TakenUnknown
			}
			return binaryTest(op, a, pat, true)
		}
		b, bok := d.it.expandString(rhs)
		if !bok {
			return TakenUnknown
		}
		return binaryTest(op, a, b, false)
	}
	if op := d.lit(0); strings.HasPrefix(op, "-") && len(op) == 2 && d.i+1 < len(d.ws) {
		s, ok := d.it.expandString(d.ws[d.i+1])
		d.i += 2
		return unaryTest(op, field{text: s, known: ok})
	}
	s, ok := d.it.expandString(d.ws[d.i])
	d.i++
	if !ok {
		return TakenUnknown
	}
	return tbool(s != "")
}

// pattern expands a word used as a glob pattern: quoted parts match
// literally.
func (it *interp) pattern(w *word) (string, bool) {
	var b strings.Builder
	for _, p := range w.parts {
		if p.kind == pLit {
			b.WriteString(p.text)
			continue
		}
		s, ok := it.expandString(&word{parts: []part{p}})
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
