package script

import (
	"sort"
	"strconv"
	"strings"
)

// The lexer turns bash source into words and operators. It keeps what
// the audit needs and bash throws away: the line of every word, its raw
// text, and the comments beside it.

type partKind uint8

const (
	pLit    partKind = iota // unquoted literal text
	pQuoted                 // literal text that was quoted or escaped
	pDouble                 // "..." holding sub parts
	pParam                  // $name (text=name) or ${...} (text=body, braced)
	pCmd                    // $(...) or `...` (text=command)
	pArith                  // $((...)) (text=expression)
)

type part struct {
	kind   partKind
	text   string
	sub    []part
	braced bool
}

type word struct {
	parts []part
	raw   string
	line  int
	off   int
}

// lit returns the word's text when it is one unquoted literal.
func (w *word) lit() (string, bool) {
	if w == nil || len(w.parts) != 1 || w.parts[0].kind != pLit {
		return "", false
	}
	return w.parts[0].text, true
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tWord
	tNewline
	tOp    // ; & && || | |& ( ) ;; ;& ;;&
	tRedir // > >> < 2>&1 <<EOF ... (the target word follows)
	tArray // NAME=( ... ) or NAME+=( ... )
	tArith // (( ... )) as a command
)

type token struct {
	kind tokKind
	text string
	word *word
	arr  *arrayLit
	off  int
	end  int
	line int
}

// arrayLit is NAME=( elements ), elements with their lines and comments.
type arrayLit struct {
	name   string
	append bool
	elems  []arrayElem
	line   int
	raw    string
}

type arrayElem struct {
	w            *word
	commentedOut string // a "# --flag value" line inside the array
	line         int
}

// comment is the comment on one line: own is true when nothing else is on
// the line.
type comment struct {
	text     string
	own      bool
	flagLike bool // a commented-out flag, not an explanation
}

type lexer struct {
	src        []byte
	file       string
	lineBase   int // added to line numbers (a bash -c string inside a file)
	pos        int
	nl         []int
	probs      *[]Problem
	comments   map[int]comment
	code       map[int]bool
	inDBracket bool
	heredocs   []heredoc
	wantDelim  *heredoc
}

type heredoc struct {
	delim     string
	stripTabs bool
	line      int
}

func newLexer(file string, src []byte, lineBase int, probs *[]Problem) *lexer {
	lx := &lexer{src: src, file: file, lineBase: lineBase, probs: probs,
		comments: map[int]comment{}, code: map[int]bool{}}
	for i, c := range src {
		if c == '\n' {
			lx.nl = append(lx.nl, i)
		}
	}
	return lx
}

func (lx *lexer) lineAt(off int) int {
	return lx.lineBase + 1 + sort.SearchInts(lx.nl, off)
}

func (lx *lexer) problem(off int, msg string) {
	*lx.probs = append(*lx.probs, Problem{File: lx.file, Line: lx.lineAt(off), Msg: msg})
}

func (lx *lexer) peekAt(i int) byte {
	if i < len(lx.src) {
		return lx.src[i]
	}
	return 0
}

// skipBlank skips spaces, tabs and line continuations.
func (lx *lexer) skipBlank() {
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			lx.pos++
		case c == '\\' && lx.peekAt(lx.pos+1) == '\n':
			lx.pos += 2
		case c == '\\' && lx.peekAt(lx.pos+1) == '\r' && lx.peekAt(lx.pos+2) == '\n':
			lx.pos += 3
		default:
			return
		}
	}
}

// readComment reads a comment from '#' to the end of the line.
func (lx *lexer) readComment() {
	start := lx.pos
	for lx.pos < len(lx.src) && lx.src[lx.pos] != '\n' {
		lx.pos++
	}
	line := lx.lineAt(start)
	text := strings.TrimSpace(strings.TrimLeft(string(lx.src[start:lx.pos]), "#"))
	if line == 1+lx.lineBase && strings.HasPrefix(text, "!") {
		return // shebang
	}
	own := !lx.code[line]
	lx.comments[line] = comment{text: text, own: own, flagLike: own && looksLikeFlag(text)}
}

func looksLikeFlag(s string) bool {
	return len(s) > 2 && s[0] == '-' && (s[1] == '-' || isAlpha(s[1])) && (s[1] != '-' || isAlpha(s[2]))
}

func isAlpha(c byte) bool     { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isNameStart(c byte) bool { return isAlpha(c) || c == '_' }
func isNameChar(c byte) bool  { return isNameStart(c) || isDigit(c) }

func (lx *lexer) tok(kind tokKind, text string, start int) token {
	line := lx.lineAt(start)
	lx.code[line] = true
	return token{kind: kind, text: text, off: start, end: lx.pos, line: line}
}

// next returns the next token.
func (lx *lexer) next() token {
	for {
		lx.skipBlank()
		if lx.pos >= len(lx.src) {
			return token{kind: tEOF, off: lx.pos, end: lx.pos, line: lx.lineAt(lx.pos)}
		}
		if lx.src[lx.pos] != '#' {
			break
		}
		lx.readComment()
	}
	start := lx.pos
	c := lx.src[lx.pos]
	if c == '\n' {
		lx.pos++
		lx.inDBracket = false
		t := token{kind: tNewline, off: start, end: lx.pos, line: lx.lineAt(start)}
		lx.skipHeredocs()
		return t
	}
	if lx.inDBracket && (c == '<' || c == '>' || c == '(' || c == ')') {
		lx.pos++
		w := &word{parts: []part{{kind: pLit, text: string(c)}}, raw: string(c), line: lx.lineAt(start), off: start}
		t := lx.tok(tWord, "", start)
		t.word = w
		return t
	}
	head := string(lx.src[lx.pos:min(lx.pos+3, len(lx.src))])
	for _, op := range []string{";;&", ";;", ";&", "&&", "||", "|&", ";", "&", "|"} {
		if strings.HasPrefix(head, op) {
			if op == "&" && lx.peekAt(lx.pos+1) == '>' {
				break // &> redirection
			}
			lx.pos += len(op)
			return lx.tok(tOp, op, start)
		}
	}
	if c == '(' && lx.peekAt(lx.pos+1) == '(' {
		if end, ok := lx.scanArith(lx.pos); ok {
			expr := string(lx.src[lx.pos+2 : end-1])
			lx.pos = end + 1
			return lx.tok(tArith, expr, start)
		}
	}
	if c == '(' || c == ')' {
		lx.pos++
		return lx.tok(tOp, string(c), start)
	}
	if op := lx.redirOp(); op != "" {
		lx.pos += len(op)
		if strings.HasSuffix(op, "<<") || strings.HasSuffix(op, "<<-") {
			lx.wantDelim = &heredoc{stripTabs: strings.HasSuffix(op, "-"), line: lx.lineAt(start)}
		}
		return lx.tok(tRedir, op, start)
	}
	w := lx.readWord(false)
	if lx.pos == start { // cannot happen for valid input; never loop on it
		lx.pos++
		w = &word{parts: []part{{kind: pLit, text: string(c)}}, raw: string(c), line: lx.lineAt(start), off: start}
	}
	if name, app, ok := arrayAssignName(w); ok && lx.peekAt(lx.pos) == '(' {
		arr := lx.readArray(name, app, start)
		t := lx.tok(tArray, "", start)
		t.arr = arr
		return t
	}
	if lx.wantDelim != nil {
		d := lx.wantDelim
		lx.wantDelim = nil
		d.delim = unquoteDelim(w.raw)
		lx.heredocs = append(lx.heredocs, *d)
	}
	if s, ok := w.lit(); ok {
		switch s {
		case "[[":
			lx.inDBracket = true
		case "]]":
			lx.inDBracket = false
		}
	}
	t := lx.tok(tWord, "", start)
	t.word = w
	return t
}

// redirOp returns the redirection operator at the cursor, if any.
func (lx *lexer) redirOp() string {
	i := lx.pos
	for i < len(lx.src) && isDigit(lx.src[i]) {
		i++
	}
	rest := string(lx.src[i:min(i+3, len(lx.src))])
	if i > lx.pos && (rest == "" || rest[0] != '<' && rest[0] != '>') {
		return ""
	}
	for _, op := range []string{"&>>", "&>", "<<<", "<<-", "<<", "<&", "<>", "<", ">>", ">&", ">|", ">"} {
		if strings.HasPrefix(rest, op) {
			if i > lx.pos && op[0] == '&' {
				return ""
			}
			return string(lx.src[lx.pos:i]) + op
		}
	}
	return ""
}

func unquoteDelim(s string) string {
	return strings.NewReplacer(`'`, "", `"`, "", `\`, "").Replace(s)
}

// skipHeredocs skips the bodies of here-documents opened on the line just
// ended: their text is data for a command, not script.
func (lx *lexer) skipHeredocs() {
	for _, h := range lx.heredocs {
		found := false
		for lx.pos < len(lx.src) {
			end := lx.pos
			for end < len(lx.src) && lx.src[end] != '\n' {
				end++
			}
			line := strings.TrimRight(string(lx.src[lx.pos:end]), "\r")
			if h.stripTabs {
				line = strings.TrimLeft(line, "\t")
			}
			lx.pos = min(end+1, len(lx.src))
			if line == h.delim {
				found = true
				break
			}
		}
		if !found {
			*lx.probs = append(*lx.probs, Problem{File: lx.file, Line: h.line,
				Msg: "here-document: expected a line " + strconv.Quote(h.delim) + " before the end of the file"})
		}
	}
	lx.heredocs = lx.heredocs[:0]
}

// arrayAssignName matches a word NAME= or NAME+= (the '(' follows).
func arrayAssignName(w *word) (string, bool, bool) {
	s, ok := w.lit()
	if !ok || !strings.HasSuffix(s, "=") {
		return "", false, false
	}
	s = s[:len(s)-1]
	app := strings.HasSuffix(s, "+")
	s = strings.TrimSuffix(s, "+")
	if !isName(s) {
		return "", false, false
	}
	return s, app, true
}

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

// readArray reads ( elements ) after NAME=; comments inside are kept, and
// a comment line that starts with a flag is a commented-out element.
func (lx *lexer) readArray(name string, app bool, start int) *arrayLit {
	arr := &arrayLit{name: name, append: app, line: lx.lineAt(start)}
	lx.pos++ // (
	for {
		lx.skipBlank()
		if lx.pos >= len(lx.src) {
			lx.problem(start, "unterminated array "+name+"=( ... ): expected ) before the end of the file")
			break
		}
		c := lx.src[lx.pos]
		switch {
		case c == ')':
			lx.pos++
			arr.raw = string(lx.src[start:lx.pos])
			return arr
		case c == '\n':
			lx.pos++
		case c == '#':
			line := lx.lineAt(lx.pos)
			lx.readComment()
			if cm := lx.comments[line]; cm.flagLike {
				arr.elems = append(arr.elems, arrayElem{commentedOut: cm.text, line: line})
			}
		default:
			before := lx.pos
			w := lx.readWord(false)
			if lx.pos == before { // a metacharacter bash would refuse here
				lx.problem(before, "unexpected "+strconv.QuoteRune(rune(c))+" inside array "+name+"=( ... )")
				lx.pos++
				continue
			}
			lx.code[w.line] = true
			arr.elems = append(arr.elems, arrayElem{w: w, line: w.line})
		}
	}
	arr.raw = string(lx.src[start:lx.pos])
	return arr
}
