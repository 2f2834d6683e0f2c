package script

import (
	"path"
	"path/filepath"
	"strings"
)

// Parameter operators and the one command substitution the parser
// evaluates.

// applyOp applies the operator after the name: :- := :+ :? # % / ^ , and
// :offset:length. ok is false for a form the parser does not evaluate.
func (it *interp) applyOp(name string, v value, rest string) (string, bool, bool) {
	if rest == "" {
		return v.val, v.set && v.known, true
	}
	colon := strings.HasPrefix(rest, ":")
	op := rest
	if colon {
		op = rest[1:]
	}
	if op == "" {
		return "", false, false
	}
	operand := func() (string, bool) {
		return it.expandString(lexOperand(op[1:]))
	}
	empty := !v.set || colon && v.known && v.val == ""
	switch op[0] {
	case '-', '=':
		if v.set && !v.known && !empty {
			return v.val, false, true
		}
		if !empty {
			return v.val, true, true
		}
		d, ok := operand()
		if op[0] == '=' && isName(name) {
			it.setVar(name, d, ok)
		}
		return d, ok, true
	case '+':
		if v.set && !v.known {
			return "", false, true
		}
		if empty {
			return "", true, true
		}
		a, ok := operand()
		return a, ok, true
	case '?':
		if empty {
			return "", false, true // the script would stop here
		}
		return v.val, v.known, true
	}
	if colon { // ${X:offset:length}
		return substring(it, v, op)
	}
	if !v.set || !v.known || len(v.val) > 1024 {
		return "", false, true
	}
	switch {
	case strings.HasPrefix(op, "##"), strings.HasPrefix(op, "%%"), op[0] == '#', op[0] == '%':
		long := len(op) > 1 && op[1] == op[0]
		pat, ok := it.expandString(lexOperand(op[1+b2i(long):]))
		if !ok {
			return "", false, true
		}
		return trimPattern(v.val, pat, op[0] == '#', long), true, true
	case strings.HasPrefix(op, "^^"):
		return strings.ToUpper(v.val), true, true
	case strings.HasPrefix(op, ",,"):
		return strings.ToLower(v.val), true, true
	case op[0] == '/':
		all := strings.HasPrefix(op, "//")
		spec := op[1+b2i(all):]
		from, to, _ := strings.Cut(spec, "/")
		pat, ok1 := it.expandString(lexOperand(from))
		rep, ok2 := it.expandString(lexOperand(to))
		if !ok1 || !ok2 || pat == "" || strings.ContainsAny(pat, "*?[") {
			return "", false, true
		}
		if all {
			return strings.ReplaceAll(v.val, pat, rep), true, true
		}
		return strings.Replace(v.val, pat, rep, 1), true, true
	}
	return "", false, false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func substring(it *interp, v value, spec string) (string, bool, bool) {
	offS, lenS, hasLen := strings.Cut(spec, ":")
	off, ok := it.arith(offS)
	if !ok || !v.set || !v.known {
		return "", false, true
	}
	r := []rune(v.val)
	if off < 0 {
		off += int64(len(r))
	}
	off = max(0, min(off, int64(len(r))))
	end := int64(len(r))
	if hasLen {
		n, ok := it.arith(lenS)
		if !ok {
			return "", false, true
		}
		if n < 0 {
			end += n
		} else {
			end = min(end, off+n)
		}
	}
	if end < off {
		return "", false, true
	}
	return string(r[off:end]), true, true
}

// trimPattern removes the shortest or longest prefix or suffix matching a
// glob pattern.
func trimPattern(s, pat string, prefix, long bool) string {
	n := len(s)
	try := func(i int) bool {
		var cand string
		if prefix {
			cand = s[:i]
		} else {
			cand = s[n-i:]
		}
		ok, err := path.Match(pat, cand)
		return err == nil && ok
	}
	if long {
		for i := n; i >= 0; i-- {
			if try(i) {
				return cut(s, i, prefix)
			}
		}
		return s
	}
	for i := 0; i <= n; i++ {
		if try(i) {
			return cut(s, i, prefix)
		}
	}
	return s
}

func cut(s string, i int, prefix bool) string {
	if prefix {
		return s[i:]
	}
	return s[:len(s)-i]
}

// lexOperand lexes the word after an operator in ${X:-word}; blanks in it
// are part of the word.
func lexOperand(s string) *word {
	var probs []Problem
	lx := newLexer("", []byte(s), 0, &probs)
	return lx.readWord(true)
}

// cmdSub evaluates the one kind of command substitution that matters for
// finding sourced files, the script's own folder:
// $(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd) and
// $(dirname "$0") with realpath / readlink -f variants. Anything else is
// never run, so its value is unknown.
func (it *interp) cmdSub(text string) (string, bool) {
	base := ""
	switch {
	case strings.Contains(text, "BASH_SOURCE"):
		base = it.curFile()
	case strings.Contains(text, "$0") || strings.Contains(text, "${0}"):
		base = it.s.Path
	default:
		return "", false
	}
	ups := strings.Count(text, "/..")
	rest := strings.ReplaceAll(text, "/..", " ")
	for _, r := range []string{"${BASH_SOURCE[0]}", "${BASH_SOURCE}", "$BASH_SOURCE", "${0}", "$0",
		"&>/dev/null", "2>/dev/null", ">/dev/null", "&&", "$(", "readlink", "realpath", "dirname", "pwd", "cd",
		"--", "-f", "-P", "-e", "-m", `"`, `'`, "(", ")", ";"} {
		rest = strings.ReplaceAll(rest, r, " ")
	}
	if strings.TrimSpace(rest) != "" {
		return "", false
	}
	p := base
	for range strings.Count(text, "dirname") + ups {
		p = filepath.Dir(p)
	}
	if strings.Contains(text, "pwd") || strings.Contains(text, "realpath") || strings.Contains(text, "readlink") {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
	}
	return p, true
}
