package script

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Lexing and parsing are mvdan.cc/sh/v3/syntax's, the parser behind shfmt.
// This file feeds it, turns what it cannot read into problems, and keeps
// reading after a syntax error so that one bad line does not lose the rest
// of the file.

// source is one text the parser read: a file, a bash -c string, or an
// expression read again after expansion. Nodes hold offsets into src;
// their lines are lineBase plus the parser's line.
type source struct {
	file     string
	src      []byte
	lineBase int
	patched  []int // offsets where the parser read a byte other than src's
}

// chunk is a run of statements and the source their positions refer to.
// A file is one chunk, or several when reading resumed after an error.
type chunk struct {
	src      *source
	stmts    []*syntax.Stmt
	comments []syntax.Comment // outside $( ): see treeWalk
}

func (s *source) line(p syntax.Pos) int {
	if !p.IsValid() {
		return 0
	}
	return s.lineBase + int(p.Line())
}

// slice is the text from one position to another. A missing end (a
// construct the parser closed for us at the end of the file) runs to the
// end of the text.
func (s *source) slice(from, to syntax.Pos) string {
	a, b := int(from.Offset()), len(s.src)
	if to.IsValid() {
		b = min(int(to.Offset()), b)
	}
	if !from.IsValid() || a > b {
		return ""
	}
	return string(s.src[a:b])
}

// raw is a node's text as written, line continuations removed.
func (s *source) raw(n syntax.Node) string {
	return strings.ReplaceAll(s.slice(n.Pos(), n.End()), "\\\n", "")
}

// text is a statement's text without the ; or & after it, and without
// the body of a here-document it opens (which follows the line).
func (s *source) text(st *syntax.Stmt) string {
	if st == nil {
		return ""
	}
	return strings.TrimSpace(s.slice(st.Position, stmtEnd(st)))
}

// listText is the text of a statement list: an if condition, a while
// header.
func (s *source) listText(stmts []*syntax.Stmt) string {
	if len(stmts) == 0 {
		return ""
	}
	return strings.TrimSpace(s.slice(stmts[0].Position, stmtEnd(stmts[len(stmts)-1])))
}

// patchedIn says whether the parser read a patched byte between two
// positions (an invalid end runs to the end of the text).
func (s *source) patchedIn(from, to syntax.Pos) bool {
	if len(s.patched) == 0 {
		return false
	}
	end := len(s.src)
	if to.IsValid() {
		end = int(to.Offset())
	}
	i := sort.SearchInts(s.patched, int(from.Offset()))
	return i < len(s.patched) && s.patched[i] < end
}

// litValue is a literal's value, or its text as written where the
// parser read a patched byte.
func (s *source) litValue(l *syntax.Lit) string {
	if s.patchedIn(l.Pos(), l.End()) {
		return strings.ReplaceAll(s.slice(l.Pos(), l.End()), "\\\n", "")
	}
	return l.Value
}

// commentText is a comment's text after the # signs.
func (s *source) commentText(c *syntax.Comment) string {
	text := c.Text
	if s.patchedIn(c.Pos(), c.End()) {
		text = s.inner(c.Pos(), 1, c.End())
	}
	return strings.TrimSpace(strings.TrimLeft(text, "#"))
}

// inner is the text between an opening token of n bytes at from and the
// closing token at to: the expression of (( )), the command of $( ).
func (s *source) inner(from syntax.Pos, n int, to syntax.Pos) string {
	t := s.slice(from, to)
	if len(t) < n {
		return ""
	}
	return t[n:]
}

func stmtEnd(st *syntax.Stmt) syntax.Pos {
	end := st.Position
	if st.Cmd != nil {
		end = st.Cmd.End()
	}
	for _, r := range st.Redirs {
		if r.Word != nil && end.IsValid() {
			end = posMax(end, r.Word.End())
		}
	}
	return end
}

func posMax(a, b syntax.Pos) syntax.Pos {
	if b.After(a) {
		return b
	}
	return a
}

// errTooDeep stops the parser; see depthReader.
var errTooDeep = errors.New("nested too deeply")

const (
	// maxParseFrames is the stack depth, in frames, at which the parser is
	// stopped: about 300 nested ( or 1300 nested if below our own frames,
	// a few MiB of stack. No script nests a tenth of it.
	maxParseFrames = 8192
	// maxSyntaxErrors per file: past them the rest of the file is skipped.
	maxSyntaxErrors = 32
	// maxRecovered missing closers (fi, done, a quote) the parser supplies
	// per file before a missing one is a syntax error.
	maxRecovered = 16
)

// depthReader feeds the parser its input and stops it when the parser's
// own recursion runs deep. mvdan's parser recurses once per nesting level
// ((, $(, ${, if, { ...) and has no limit of its own: a few MiB of "(((("
// would overflow the goroutine stack, a fatal error that recover cannot
// catch. The parser reads 1 KiB at a time, so between two checks it nests
// at most 1 KiB deeper.
type depthReader struct {
	src  []byte
	off  int
	deep bool
}

func newDepthReader(src []byte) *depthReader { return &depthReader{src: src} }

func (r *depthReader) Read(p []byte) (int, error) {
	if r.off >= len(r.src) {
		return 0, io.EOF
	}
	// the first read starts the parser: nothing is open yet. A frame
	// maxParseFrames down the stack means the parser is in too deep.
	var pc [1]uintptr
	if r.off > 0 && runtime.Callers(maxParseFrames, pc[:]) > 0 {
		r.deep = true
		return 0, errTooDeep
	}
	n := copy(p, r.src[r.off:])
	r.off += n
	return n, nil
}

func newFileParser() *syntax.Parser {
	return syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash), syntax.RecoverErrors(maxRecovered))
}

// parse reads text into statements. A syntax error is a problem at its
// line: the statements before it are kept and reading resumes on the line
// after it, unless the error is an unclosed construct that took the rest
// of the file.
func (it *interp) parse(file string, text []byte, lineBase int) []chunk {
	if bytes.Contains(text, []byte("\r\n")) {
		// Windows line ends: the text bash's author meant has none
		text = bytes.ReplaceAll(text, []byte("\r\n"), []byte("\n"))
	}
	var out []chunk
	input, patched := patchUTF8(text) // what the parser reads
	budget := 4*len(text) + 64<<10    // bytes parsed again after patching
	for start, nerr := 0, 1; ; {
		s := &source{file: file, src: text[start:], lineBase: lineBase}
		for _, p := range patched[sort.SearchInts(patched, start):] {
			s.patched = append(s.patched, p-start)
		}
		stmts, err, off := it.read(input[start:])
		var pe syntax.ParseError
		var le syntax.LangError
		isParseErr := errors.As(err, &pe)
		if at := start + int(pe.Pos.Offset()); isParseErr && strings.HasPrefix(pe.Text, "`[x]` must be followed by") &&
			budget > 0 && at < len(text) && input[at] == '[' {
			// bash reads an element [0]*3 that is not [index]=value as a
			// word; mvdan refuses it. The parser reads it as x0]*3 (same
			// length, same offsets) and expansion takes the text as written.
			if len(patched) == 0 {
				input = bytes.Clone(text)
			}
			input[at] = 'x'
			i := sort.SearchInts(patched, at)
			patched = slices.Insert(patched, i, at)
			budget -= len(text) - start
			continue
		}
		w := walkTree(s, stmts)
		out = append(out, chunk{src: s, stmts: stmts, comments: w.comments})
		it.s.Problems = append(it.s.Problems, w.probs...)
		if err == nil {
			return out
		}
		line, msg, resume := 0, err.Error(), false
		switch {
		case errors.Is(err, errTooDeep):
			line = lineBase + 1 + bytes.Count(s.src[:off], []byte("\n"))
			msg = "commands nested too deeply: the rest of the file is skipped"
		case isParseErr:
			line, msg, resume = s.line(pe.Pos), "syntax error: "+pe.Text, !pe.Incomplete
		case errors.As(err, &le):
			line, resume = s.line(le.Pos), true
			msg = "syntax error: " + strings.TrimPrefix(le.Error(), le.Pos.String()+": ")
		default: // the parser failed
			line = lineBase + 1 + bytes.Count(s.src[:off], []byte("\n"))
		}
		next := lineStart(s.src, line-lineBase+1)
		switch {
		case !resume || next >= len(s.src) || line <= lineBase: // nowhere to resume
			if resume || !strings.Contains(msg, "skipped") {
				msg += "; the rest of the file is skipped"
			}
			resume = false
		case nerr >= maxSyntaxErrors:
			msg += "; more than 32 syntax errors, the rest of the file is skipped"
			resume = false
		default:
			msg += "; reading resumes on the next line"
		}
		it.s.Problems = append(it.s.Problems, Problem{File: file, Line: line, Msg: msg})
		if !resume {
			return out
		}
		start, lineBase, nerr = start+next, line, nerr+1
	}
}

// read runs the parser over input: the statements before the first
// error, the error, and how far the parser had read.
func (it *interp) read(input []byte) (stmts []*syntax.Stmt, err error, off int) {
	r := newDepthReader(input)
	defer func() {
		if v := recover(); v != nil {
			// v3.14.1 indexes out of range on some malformed input (found
			// by FuzzScript); a fresh parser for what follows
			it.parser = newFileParser()
			err, off = fmt.Errorf("shell parser failed near here (%v)", v), r.off
		}
	}()
	for st, e := range it.parser.StmtsSeq(r) {
		// no break: v3.14.1's iterator yields its final error even after
		// the loop body said stop, which panics
		if e != nil && err == nil { // a statement the error cut short is dropped
			err = e
		}
		if err == nil {
			stmts = append(stmts, st)
		}
	}
	if r.deep {
		err = errTooDeep
	}
	return stmts, err, r.off
}

// patchUTF8 shows the parser an x where text is not UTF-8 (a Latin-1 or
// GBK comment), which mvdan refuses and bash reads as bytes. The offsets
// stay, and values are read from text where a patch lies.
func patchUTF8(text []byte) ([]byte, []int) {
	if utf8.Valid(text) {
		return text, nil
	}
	input := bytes.Clone(text)
	var patched []int
	for i := 0; i < len(input); {
		r, n := utf8.DecodeRune(input[i:])
		if r == utf8.RuneError && n == 1 {
			input[i] = 'x'
			patched = append(patched, i)
		}
		i += n
	}
	return input, patched
}

// lineStart is the offset where line n (1-based) begins, len(src) past
// the end.
func lineStart(src []byte, n int) int {
	off := 0
	for ; n > 1; n-- {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return len(src)
		}
		off += i + 1
	}
	return off
}

// parseSnippet reads an arithmetic expression (Arithmetic) or a text to
// expand as a here-document body does (Document): a value bash reads
// again. It returns nil when the text does not parse.
func parseSnippet[T any](pp **syntax.Parser, text string, read func(*syntax.Parser, io.Reader) (T, error)) (x T, ok bool) {
	if !utf8.ValidString(text) {
		return x, false
	}
	r := newDepthReader([]byte(text))
	defer func() {
		if recover() != nil {
			*pp = syntax.NewParser(syntax.Variant(syntax.LangBash)) // as in read
			ok = false
		}
	}()
	x, err := read(*pp, r)
	return x, err == nil && !r.deep
}
