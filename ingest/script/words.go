package script

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Word helpers. mvdan's parser keeps a literal's backslashes as written
// (it\'s, "a\"b"), so that a printer can reproduce the source; removing
// them is expansion's job, done here as bash does.

func isAlpha(c byte) bool     { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isNameStart(c byte) bool { return isAlpha(c) || c == '_' }
func isNameChar(c byte) bool  { return isNameStart(c) || isDigit(c) }

func itoa(n int) string { return strconv.Itoa(n) }

func isName(s string) bool {
	if s == "" || !isNameStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

// looksLikeFlag says whether a comment's text starts with a flag: a
// commented-out setting rather than an explanation.
func looksLikeFlag(s string) bool {
	return len(s) > 2 && s[0] == '-' && (s[1] == '-' || isAlpha(s[1])) && (s[1] != '-' || isAlpha(s[2]))
}

// lit returns the word's text when it is one unquoted literal without
// escapes: a keyword or command name as bash recognises one.
func lit(w *syntax.Word) (string, bool) {
	if w == nil || len(w.Parts) != 1 {
		return "", false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok || strings.IndexByte(l.Value, '\\') >= 0 {
		return "", false
	}
	return l.Value, true
}

// unescape removes the backslashes of an unquoted literal: \x is x, and
// a backslash-newline joins lines.
func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDouble removes the backslashes that mean something inside
// double quotes (before $ ` " \ and newline) and keeps the others.
func unescapeDouble(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '\n':
				i++
				continue
			case '$', '`', '"', '\\':
				i++
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// wordAssign splits a command argument NAME=value (export "X"=1 after a
// quoted or prefixed export, where the parser sees plain words): the
// name, whether it appends, and the value's parts.
func wordAssign(w *syntax.Word) (name string, app bool, value []syntax.WordPart, ok bool) {
	if w == nil || len(w.Parts) == 0 {
		return "", false, nil, false
	}
	l, isLit := w.Parts[0].(*syntax.Lit)
	if !isLit {
		return "", false, nil, false
	}
	eq := strings.IndexByte(l.Value, '=')
	if eq <= 0 {
		return "", false, nil, false
	}
	name = l.Value[:eq]
	if strings.HasSuffix(name, "+") {
		app, name = true, name[:len(name)-1]
	}
	if i := strings.IndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") {
		name = name[:i] // an element assignment sets the array
	}
	if !isName(name) {
		return "", false, nil, false
	}
	if rest := l.Value[eq+1:]; rest != "" {
		value = append(value, &syntax.Lit{Value: rest})
	}
	return name, app, append(value, w.Parts[1:]...), true
}

// ansiC decodes the escapes of a $'...' string.
func ansiC(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'v':
			b.WriteByte(11)
		case 'x':
			j := i + 1
			for j < len(s) && j < i+3 && strings.IndexByte("0123456789abcdefABCDEF", s[j]) >= 0 {
				j++
			}
			if v, err := strconv.ParseUint(s[i+1:j], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i = j - 1
			} else {
				b.WriteString(`\x`)
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(v))
			i = j - 1
		default: // \\ \' \" \? and unknown escapes keep the character
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
