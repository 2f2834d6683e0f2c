package script

import (
	"path"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Parameter operators and the one command substitution the parser
// evaluates.

// applyOp applies the operator of ${X...}: :- := :+ :? # ## % %% / //
// ^^ ,, and :offset:length. ok is false for a form the parser does not
// evaluate.
func (it *interp) applyOp(name string, v value, pe *syntax.ParamExp) (string, bool, bool) {
	switch {
	case pe.Slice != nil:
		return it.substring(v, pe.Slice)
	case pe.Exp == nil && pe.Repl == nil:
		return v.val, v.set && v.known, true
	}
	if pe.Exp != nil {
		op := pe.Exp.Op
		colon := op == syntax.DefaultUnsetOrNull || op == syntax.AssignUnsetOrNull ||
			op == syntax.AlternateUnsetOrNull || op == syntax.ErrorUnsetOrNull
		empty := !v.set || colon && v.known && v.val == ""
		switch op {
		case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
			if v.set && !v.known && !empty {
				return v.val, false, true
			}
			if !empty {
				return v.val, true, true
			}
			d, ok := it.expandString(pe.Exp.Word)
			if (op == syntax.AssignUnset || op == syntax.AssignUnsetOrNull) && isName(name) {
				it.setVar(name, d, ok)
			}
			return d, ok, true
		case syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
			if v.set && !v.known {
				return "", false, true
			}
			if empty {
				return "", true, true
			}
			a, ok := it.expandString(pe.Exp.Word)
			return a, ok, true
		case syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
			if empty {
				return "", false, true // the script would stop here
			}
			return v.val, v.known, true
		}
	}
	if !v.set || !v.known || len(v.val) > 1024 {
		return "", false, true
	}
	if r := pe.Repl; r != nil {
		pat, ok1 := it.expandString(r.Orig)
		rep, ok2 := it.expandString(r.With)
		if !ok1 || !ok2 || pat == "" || strings.ContainsAny(pat, "*?[") {
			return "", false, true
		}
		if r.All {
			return strings.ReplaceAll(v.val, pat, rep), true, true
		}
		return strings.Replace(v.val, pat, rep, 1), true, true
	}
	switch op := pe.Exp.Op; op {
	case syntax.RemSmallPrefix, syntax.RemLargePrefix, syntax.RemSmallSuffix, syntax.RemLargeSuffix:
		pat, ok := it.expandString(pe.Exp.Word)
		if !ok {
			return "", false, true
		}
		prefix := op == syntax.RemSmallPrefix || op == syntax.RemLargePrefix
		long := op == syntax.RemLargePrefix || op == syntax.RemLargeSuffix
		return trimPattern(v.val, pat, prefix, long), true, true
	case syntax.UpperAll:
		return strings.ToUpper(v.val), true, true
	case syntax.LowerAll:
		return strings.ToLower(v.val), true, true
	}
	return "", false, false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// substring is ${X:offset} and ${X:offset:length}.
func (it *interp) substring(v value, sl *syntax.Slice) (string, bool, bool) {
	off, ok := it.arithNode(sl.Offset)
	if !ok || !v.set || !v.known {
		return "", false, true
	}
	r := []rune(v.val)
	if off < 0 {
		off += int64(len(r))
	}
	off = max(0, min(off, int64(len(r))))
	end := int64(len(r))
	if sl.Length != nil {
		n, ok := it.arithNode(sl.Length)
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
