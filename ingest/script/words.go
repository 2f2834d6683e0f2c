package script

import (
	"bytes"
	"strconv"
	"strings"
)

// Words: quotes, escapes and the $-expansions inside them are kept as
// parts, so that expansion can tell quoted text from text bash would split.

// readWord reads one word. With spaces, blanks and metacharacters are part
// of the word (the operand of ${X:-...}).
func (lx *lexer) readWord(spaces bool) *word {
	start := lx.pos
	w := &word{line: lx.lineAt(start), off: start}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			w.parts = append(w.parts, part{kind: pLit, text: lit.String()})
			lit.Reset()
		}
	}
loop:
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch c {
		case ' ', '\t', '\n', '\r', ';', '&', '|', '<', '>', '(', ')':
			if !spaces {
				break loop
			}
			lit.WriteByte(c)
			lx.pos++
		case '\\':
			if lx.peekAt(lx.pos+1) == '\n' {
				lx.pos += 2
				continue
			}
			flush()
			if lx.pos+1 < len(lx.src) {
				w.parts = append(w.parts, part{kind: pQuoted, text: string(lx.src[lx.pos+1])})
				lx.pos += 2
			} else {
				lit.WriteByte(c)
				lx.pos++
			}
		case '\'':
			flush()
			w.parts = append(w.parts, lx.readSingle())
		case '"':
			flush()
			w.parts = append(w.parts, lx.readDouble())
		case '`':
			flush()
			w.parts = append(w.parts, lx.readBacktick())
		case '$':
			if p, ok := lx.readDollar(false); ok {
				flush()
				w.parts = append(w.parts, p)
			} else {
				lit.WriteByte(c)
				lx.pos++
			}
		default:
			lit.WriteByte(c)
			lx.pos++
		}
	}
	flush()
	w.raw = strings.ReplaceAll(string(lx.src[start:lx.pos]), "\\\n", "")
	return w
}

func (lx *lexer) readSingle() part {
	start := lx.pos
	end := bytes.IndexByte(lx.src[lx.pos+1:], '\'')
	if end < 0 {
		lx.problem(start, "unterminated single quote: expected ' before the end of the file")
		lx.pos = len(lx.src)
		return part{kind: pQuoted, text: string(lx.src[start+1:])}
	}
	lx.pos = start + 1 + end + 1
	return part{kind: pQuoted, text: string(lx.src[start+1 : start+1+end])}
}

func (lx *lexer) readDouble() part {
	start := lx.pos
	lx.pos++
	d := part{kind: pDouble}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			d.sub = append(d.sub, part{kind: pQuoted, text: lit.String()})
			lit.Reset()
		}
	}
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch c {
		case '"':
			lx.pos++
			flush()
			return d
		case '\\':
			n := lx.peekAt(lx.pos + 1)
			switch n {
			case '\n':
				lx.pos += 2
			case '$', '`', '"', '\\':
				lit.WriteByte(n)
				lx.pos += 2
			default:
				lit.WriteByte(c)
				lx.pos++
			}
		case '`':
			flush()
			d.sub = append(d.sub, lx.readBacktick())
		case '$':
			if p, ok := lx.readDollar(true); ok {
				flush()
				d.sub = append(d.sub, p)
			} else {
				lit.WriteByte(c)
				lx.pos++
			}
		default:
			lit.WriteByte(c)
			lx.pos++
		}
	}
	lx.problem(start, `unterminated double quote: expected " before the end of the file`)
	flush()
	return d
}

func (lx *lexer) readBacktick() part {
	start := lx.pos
	i := lx.pos + 1
	for i < len(lx.src) && lx.src[i] != '`' {
		if lx.src[i] == '\\' {
			i++
		}
		i++
	}
	if i >= len(lx.src) {
		lx.problem(start, "unterminated ` command substitution: expected ` before the end of the file")
		lx.pos = len(lx.src)
		return part{kind: pCmd, text: string(lx.src[start+1:])}
	}
	lx.pos = i + 1
	return part{kind: pCmd, text: string(lx.src[start+1 : i])}
}

// readDollar reads an expansion at '$'; ok is false for a lone '$'.
func (lx *lexer) readDollar(inDouble bool) (part, bool) {
	start := lx.pos
	n := lx.peekAt(lx.pos + 1)
	switch {
	case n == '(' && lx.peekAt(lx.pos+2) == '(':
		if end, ok := lx.scanArith(lx.pos + 1); ok {
			lx.pos = end + 1
			return part{kind: pArith, text: string(lx.src[start+3 : end-1])}, true
		}
		fallthrough
	case n == '(':
		end := lx.scanParen(lx.pos + 1)
		if end < 0 {
			lx.problem(start, "unterminated $( command substitution: expected ) before the end of the file")
			lx.pos = len(lx.src)
			return part{kind: pCmd, text: string(lx.src[start+2:])}, true
		}
		lx.pos = end + 1
		return part{kind: pCmd, text: string(lx.src[start+2 : end])}, true
	case n == '{':
		end := lx.scanBrace(lx.pos + 1)
		if end < 0 {
			lx.problem(start, "unterminated ${ expansion: expected } before the end of the file")
			lx.pos = len(lx.src)
			return part{kind: pParam, text: string(lx.src[start+2:]), braced: true}, true
		}
		lx.pos = end + 1
		return part{kind: pParam, text: string(lx.src[start+2 : end]), braced: true}, true
	case n == '\'' && !inDouble:
		lx.pos++
		p := lx.readSingle()
		p.text = ansiC(p.text)
		return p, true
	case n == '"' && !inDouble:
		lx.pos++
		return lx.readDouble(), true
	case isNameStart(n):
		i := lx.pos + 1
		for i < len(lx.src) && isNameChar(lx.src[i]) {
			i++
		}
		lx.pos = i
		return part{kind: pParam, text: string(lx.src[start+1 : i])}, true
	case isDigit(n) || strings.IndexByte("@*#?$!-", n) >= 0 && n != 0:
		lx.pos += 2
		return part{kind: pParam, text: string(n)}, true
	}
	return part{}, false
}

// scanParen returns the index of the ')' matching the '(' at open, or -1.
// Quotes, escapes, nested substitutions and comments are skipped.
func (lx *lexer) scanParen(open int) int {
	depth := 0
	for i := open; i < len(lx.src); i++ {
		switch c := lx.src[i]; c {
		case '\\':
			i++
		case '\'':
			j := bytes.IndexByte(lx.src[i+1:], '\'')
			if j < 0 {
				return -1
			}
			i += j + 1
		case '"':
			j := lx.skipDouble(i)
			if j < 0 {
				return -1
			}
			i = j
		case '`':
			for i++; i < len(lx.src) && lx.src[i] != '`'; i++ {
				if lx.src[i] == '\\' {
					i++
				}
			}
		case '#':
			if i > open && strings.IndexByte(" \t\n;(", lx.src[i-1]) >= 0 {
				for i < len(lx.src) && lx.src[i] != '\n' {
					i++
				}
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// skipDouble returns the index of the '"' closing the one at open, or -1.
func (lx *lexer) skipDouble(open int) int {
	for i := open + 1; i < len(lx.src); i++ {
		switch lx.src[i] {
		case '\\':
			i++
		case '"':
			return i
		case '$':
			if lx.peekAt(i+1) == '(' {
				j := lx.scanParen(i + 1)
				if j < 0 {
					return -1
				}
				i = j
			} else if lx.peekAt(i+1) == '{' {
				j := lx.scanBrace(i + 1)
				if j < 0 {
					return -1
				}
				i = j
			}
		}
	}
	return -1
}

// scanBrace returns the index of the '}' matching the '{' at open, or -1.
func (lx *lexer) scanBrace(open int) int {
	depth := 0
	for i := open; i < len(lx.src); i++ {
		switch lx.src[i] {
		case '\\':
			i++
		case '\'':
			j := bytes.IndexByte(lx.src[i+1:], '\'')
			if j < 0 {
				return -1
			}
			i += j + 1
		case '"':
			j := lx.skipDouble(i)
			if j < 0 {
				return -1
			}
			i = j
		case '$':
			if lx.peekAt(i+1) == '(' {
				j := lx.scanParen(i + 1)
				if j < 0 {
					return -1
				}
				i = j
			}
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// scanArith checks for "((expr))" with the first '(' at open; it returns the
// index of the final ')' when the parentheses close as arithmetic does.
func (lx *lexer) scanArith(open int) (int, bool) {
	depth := 0
	// an arithmetic command is short; a bounded look keeps a line of
	// thousands of '(' linear
	for i := open; i < len(lx.src) && i < open+1024; i++ {
		switch lx.src[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 1 && i+1 < len(lx.src) && lx.src[i+1] == ')' {
				return i + 1, true
			}
			if depth <= 1 {
				return 0, false
			}
		case '\n', ';', '\'', '"', '`':
			if depth <= 1 {
				return 0, false
			}
		}
	}
	return 0, false
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
