package flightsrv

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The lexer is not the authority on what a query means (DuckDB's parser
// is, see check.go). It finds statement boundaries, the leading keyword and
// function-call names so that refusals can name what they refuse, and it
// is a second, independent check: where it and DuckDB disagree, the query
// is refused.

type tokKind int

const (
	tWord   tokKind = iota // keyword or bare identifier
	tQuoted                // "quoted identifier", unescaped
	tString                // 'string', E'string', $$string$$
	tNumber
	tParam // ?, $1, $name
	tPunct // any other single character
)

type token struct {
	kind tokKind
	text string // for words: as written; quoted: the name; punct: the char
	pos  int    // byte offset in the query
}

// upper is the keyword form of a word token; "" for other kinds.
func (t token) upper() string {
	if t.kind != tWord {
		return ""
	}
	return strings.ToUpper(t.text)
}

func (t token) isPunct(c string) bool { return t.kind == tPunct && t.text == c }

// lex splits q into tokens, dropping whitespace and comments. It fails on
// an unterminated string, identifier or comment.
func lex(q string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(q) {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && strings.HasPrefix(q[i:], "--"):
			if j := strings.IndexByte(q[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(q)
			}
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			// Block comments nest, as in PostgreSQL's grammar that DuckDB uses.
			depth, j := 1, i+2
			for depth > 0 {
				if j >= len(q) {
					return nil, fmt.Errorf("unterminated /* comment at offset %d", i)
				}
				switch {
				case strings.HasPrefix(q[j:], "/*"):
					depth++
					j += 2
				case strings.HasPrefix(q[j:], "*/"):
					depth--
					j += 2
				default:
					j++
				}
			}
			i = j
		case c == '\'':
			s, n, err := lexQuoted(q[i:], '\'', false)
			if err != nil {
				return nil, fmt.Errorf("%v at offset %d", err, i)
			}
			toks = append(toks, token{tString, s, i})
			i += n
		case (c == 'e' || c == 'E') && i+1 < len(q) && q[i+1] == '\'':
			s, n, err := lexQuoted(q[i+1:], '\'', true)
			if err != nil {
				return nil, fmt.Errorf("%v at offset %d", err, i)
			}
			toks = append(toks, token{tString, s, i})
			i += 1 + n
		case c == '"':
			s, n, err := lexQuoted(q[i:], '"', false)
			if err != nil {
				return nil, fmt.Errorf("%v at offset %d", err, i)
			}
			toks = append(toks, token{tQuoted, s, i})
			i += n
		case c == '$':
			tok, n, err := lexDollar(q[i:])
			if err != nil {
				return nil, fmt.Errorf("%v at offset %d", err, i)
			}
			tok.pos = i
			toks = append(toks, tok)
			i += n
		case c == '?':
			toks = append(toks, token{tParam, "?", i})
			i++
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9':
			j := i + 1
			for j < len(q) && (isIdentByte(q[j]) || q[j] == '.') {
				j++
			}
			toks = append(toks, token{tNumber, q[i:j], i})
			i = j
		case isIdentStart(q[i:]):
			j := i
			for j < len(q) {
				r, size := utf8.DecodeRuneInString(q[j:])
				if !(r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r) || r >= utf8.RuneSelf) {
					break
				}
				j += size
			}
			toks = append(toks, token{tWord, q[i:j], i})
			i = j
		default:
			_, size := utf8.DecodeRuneInString(q[i:])
			toks = append(toks, token{tPunct, q[i : i+size], i})
			i += size
		}
	}
	return toks, nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isIdentStart(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r == '_' || unicode.IsLetter(r) || r >= utf8.RuneSelf && !unicode.IsSpace(r) && !unicode.IsPunct(r) && !unicode.IsSymbol(r)
}

// lexQuoted reads a string quoted with q (doubled q escapes it; with
// backslash set, as in E'...', so does a backslash). It returns the
// content and the bytes consumed.
func lexQuoted(s string, q byte, backslash bool) (string, int, error) {
	var b strings.Builder
	for j := 1; j < len(s); j++ {
		switch {
		case backslash && s[j] == '\\' && j+1 < len(s):
			b.WriteByte(s[j+1])
			j++
		case s[j] == q && j+1 < len(s) && s[j+1] == q:
			b.WriteByte(q)
			j++
		case s[j] == q:
			return b.String(), j + 1, nil
		default:
			b.WriteByte(s[j])
		}
	}
	if q == '"' {
		return "", 0, fmt.Errorf("unterminated quoted identifier")
	}
	return "", 0, fmt.Errorf("unterminated string")
}

// lexDollar reads $1, $name or a $tag$...$tag$ string.
func lexDollar(s string) (token, int, error) {
	j := 1
	for j < len(s) && isIdentByte(s[j]) {
		j++
	}
	if j < len(s) && s[j] == '$' && (j == 1 || !(s[1] >= '0' && s[1] <= '9')) {
		tag := s[:j+1]
		end := strings.Index(s[j+1:], tag)
		if end < 0 {
			return token{}, 0, fmt.Errorf("unterminated %s string", tag)
		}
		return token{kind: tString, text: s[j+1 : j+1+end]}, j + 1 + end + len(tag), nil
	}
	if j == 1 {
		return token{kind: tPunct, text: "$"}, 1, nil
	}
	return token{kind: tParam, text: s[:j]}, j, nil
}

// statements splits tokens at semicolons and drops empty statements.
func statements(toks []token) [][]token {
	var out [][]token
	start := 0
	for i := 0; i <= len(toks); i++ {
		if i == len(toks) || toks[i].isPunct(";") {
			if i > start {
				out = append(out, toks[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// leadingKeyword is the statement's first word, skipping opening
// parentheses: "(SELECT 1)" starts with SELECT.
func leadingKeyword(stmt []token) (string, int) {
	for i, t := range stmt {
		if t.isPunct("(") {
			continue
		}
		return t.upper(), i
	}
	return "", len(stmt)
}

// topLevelKeywords are the words outside any parentheses, in order: in
// "WITH x AS (...) INSERT INTO ...", they show the statement is an INSERT.
func topLevelKeywords(stmt []token) []string {
	var out []string
	depth := 0
	for _, t := range stmt {
		switch {
		case t.isPunct("("):
			depth++
		case t.isPunct(")"):
			depth--
		case depth == 0 && t.kind == tWord:
			out = append(out, t.upper())
		}
	}
	return out
}

// calledNames are the names written right before "(", lower-cased: the
// functions a query calls (and a few keywords such as IN or AS, which no
// caller looks up).
func calledNames(toks []token) []string {
	var out []string
	for i := 0; i+1 < len(toks); i++ {
		if (toks[i].kind == tWord || toks[i].kind == tQuoted) && toks[i+1].isPunct("(") {
			out = append(out, strings.ToLower(toks[i].text))
		}
	}
	return out
}
