package script

import (
	"bytes"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A walk over the syntax tree before evaluation: it gathers the comments
// (attached to lines by position, not to nodes as the parser does) and
// reports each closing token the parser had to supply at the end of an
// unterminated construct. Chains of && || |
// and elif are walked without recursion, as the parser builds them: they
// can be longer than a stack allows.

type treeWalk struct {
	src      *source
	comments []syntax.Comment // outside $( ) and <( ): those are not the file's lines
	probs    []Problem
	inSubst  int
}

func walkTree(s *source, stmts []*syntax.Stmt) *treeWalk {
	w := &treeWalk{src: s}
	w.stmts(stmts, nil)
	return w
}

func (w *treeWalk) comment(cs []syntax.Comment) {
	if w.inSubst == 0 {
		w.comments = append(w.comments, cs...)
	}
}

// missing reports a closer the parser supplied: what was open at open,
// and the first text after the construct's content.
func (w *treeWalk) missing(open syntax.Pos, what, want string, after syntax.Pos) {
	w.probs = append(w.probs, Problem{File: w.src.file, Line: w.src.line(open),
		Msg: what + ": expected " + want + " before " + w.describe(after)})
}

func (w *treeWalk) unterminated(open syntax.Pos, what, want string) {
	w.probs = append(w.probs, Problem{File: w.src.file, Line: w.src.line(open),
		Msg: "unterminated " + what + ": expected " + want + " before the end of the file"})
}

// describe names the first token at or after p: "the end of the file" or
// "'done' on line 7".
func (w *treeWalk) describe(p syntax.Pos) string {
	src := w.src.src
	if !p.IsValid() {
		return "the end of the file"
	}
	i := int(p.Offset())
	for i < len(src) {
		switch c := src[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		default:
			j := i
			for j < len(src) && j < i+32 && !bytes.ContainsRune([]byte(" \t\r\n;"), rune(src[j])) {
				j++
			}
			if j == i {
				j++
			}
			return "'" + string(src[i:j]) + "' on line " + itoa(w.src.lineBase+1+bytes.Count(src[:i], []byte("\n")))
		}
	}
	return "the end of the file"
}

func endOf(stmts []*syntax.Stmt, fallback syntax.Pos) syntax.Pos {
	if len(stmts) == 0 {
		return fallback
	}
	return stmtEnd(stmts[len(stmts)-1])
}

func (w *treeWalk) stmts(stmts []*syntax.Stmt, last []syntax.Comment) {
	for _, st := range stmts {
		w.stmt(st)
	}
	w.comment(last)
}

func (w *treeWalk) stmt(st *syntax.Stmt) {
	// && || | chains: an explicit stack instead of recursion
	todo := []*syntax.Stmt{st}
	for len(todo) > 0 {
		st = todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if st == nil {
			continue
		}
		// a statement the parser supplied (an empty body, nothing after
		// &&) comes with a missing closer or is harmless: not reported
		w.comment(st.Comments)
		if b, ok := st.Cmd.(*syntax.BinaryCmd); ok {
			todo = append(todo, b.Y, b.X)
		} else {
			w.command(st.Cmd)
		}
		for _, r := range st.Redirs {
			if r.Word != nil && r.Word.Pos().IsRecovered() {
				w.missing(r.OpPos, "redirection "+r.Op.String(), "a file name", syntax.Pos{})
			} else {
				w.word(r.Word)
			}
		}
	}
}

func (w *treeWalk) command(c syntax.Command) {
	switch c := c.(type) {
	case *syntax.CallExpr:
		w.assigns(c.Assigns)
		w.words(c.Args)
	case *syntax.DeclClause:
		w.assigns(c.Args)
	case *syntax.Subshell:
		w.stmts(c.Stmts, c.Last)
		if c.Rparen.IsRecovered() {
			w.missing(c.Lparen, "subshell", ")", endOf(c.Stmts, syntax.Pos{}))
		}
	case *syntax.Block:
		w.stmts(c.Stmts, c.Last)
		if c.Rbrace.IsRecovered() {
			w.missing(c.Lbrace, "{", "}", endOf(c.Stmts, syntax.Pos{}))
		}
	case *syntax.IfClause:
		w.ifClause(c)
	case *syntax.WhileClause:
		kw := "while"
		if c.Until {
			kw = "until"
		}
		w.stmts(c.Cond, c.CondLast)
		w.stmts(c.Do, c.DoLast)
		w.loopEnd(c.WhilePos, kw, c.DoPos, c.DonePos, endOf(c.Cond, syntax.Pos{}), endOf(c.Do, syntax.Pos{}))
	case *syntax.ForClause:
		kw := "for"
		if c.Select {
			kw = "select"
		}
		var head syntax.Pos
		if wi, ok := c.Loop.(*syntax.WordIter); ok {
			w.words(wi.Items)
			head = wi.End()
		} else if c.Loop != nil {
			head = c.Loop.End()
		}
		w.stmts(c.Do, c.DoLast)
		w.loopEnd(c.ForPos, kw, c.DoPos, c.DonePos, head, endOf(c.Do, syntax.Pos{}))
	case *syntax.CaseClause:
		w.word(c.Word)
		end := syntax.Pos{}
		if c.Word != nil {
			end = c.Word.End()
		}
		if c.In.IsRecovered() {
			w.missing(c.Case, "case", "in", end)
		} else if c.In.IsValid() {
			end = c.In
			end = syntax.NewPos(end.Offset()+2, end.Line(), end.Col()+2)
		}
		for _, item := range c.Items {
			w.comment(item.Comments)
			w.words(item.Patterns)
			w.stmts(item.Stmts, item.Last)
			end = endOf(item.Stmts, syntax.Pos{})
		}
		w.comment(c.Last)
		if c.Esac.IsRecovered() {
			w.missing(c.Case, "case", "esac", end)
		}
	case *syntax.FuncDecl:
		w.stmt(c.Body)
	case *syntax.TimeClause:
		w.stmt(c.Stmt)
	case *syntax.CoprocClause:
		w.stmt(c.Stmt)
	case *syntax.TestDecl:
		w.stmt(c.Body)
	case *syntax.ArithmCmd:
		if c.Right.IsRecovered() {
			w.unterminated(c.Left, "((", "))")
		}
	case *syntax.TestClause:
		w.test(c.X)
		if c.Right.IsRecovered() {
			w.missing(c.Left, "[[", "]]", syntax.Pos{})
		}
	}
}

func (w *treeWalk) ifClause(c *syntax.IfClause) {
	open, kw := c.Position, "if"
	var end syntax.Pos
	for ; c != nil; c = c.Else {
		w.stmts(c.Cond, c.CondLast)
		if c.ThenPos.IsRecovered() {
			w.missing(c.Position, kw, "then", endOf(c.Cond, syntax.Pos{}))
		}
		w.stmts(c.Then, c.ThenLast)
		w.comment(c.Last)
		end = endOf(c.Then, endOf(c.Cond, syntax.Pos{}))
		kw = "elif"
		if c.Else == nil && c.FiPos.IsRecovered() {
			w.missing(open, "if", "fi", end)
		}
	}
}

func (w *treeWalk) loopEnd(open syntax.Pos, kw string, do, done, head, body syntax.Pos) {
	if do.IsRecovered() {
		w.missing(open, kw, "do", head)
	}
	if done.IsRecovered() {
		w.missing(open, kw, "done", body)
	}
}

func (w *treeWalk) assigns(as []*syntax.Assign) {
	for _, a := range as {
		w.word(a.Value)
		if a.Array == nil {
			continue
		}
		for _, e := range a.Array.Elems {
			w.comment(e.Comments)
			w.word(e.Value)
		}
		w.comment(a.Array.Last)
		if a.Array.Rparen.IsRecovered() && a.Name != nil {
			w.unterminated(a.Pos(), "array "+a.Name.Value+"=( ... )", ")")
		}
	}
}

func (w *treeWalk) test(x syntax.TestExpr) { eachTestWord(x, w.word) }

// eachTestWord calls f on every operand of a [[ ]] test, left to right.
func eachTestWord(x syntax.TestExpr, f func(*syntax.Word)) {
	switch x := x.(type) {
	case *syntax.Word:
		f(x)
	case *syntax.BinaryTest:
		eachTestWord(x.X, f)
		eachTestWord(x.Y, f)
	case *syntax.UnaryTest:
		eachTestWord(x.X, f)
	case *syntax.ParenTest:
		eachTestWord(x.X, f)
	}
}

func (w *treeWalk) words(ws []*syntax.Word) {
	for _, x := range ws {
		w.word(x)
	}
}

func (w *treeWalk) word(x *syntax.Word) {
	if x == nil {
		return
	}
	w.parts(x.Parts)
}

func (w *treeWalk) parts(ps []syntax.WordPart) {
	for _, p := range ps {
		switch p := p.(type) {
		case *syntax.SglQuoted:
			if p.Right.IsRecovered() {
				w.unterminated(p.Left, "single quote", "'")
			}
		case *syntax.DblQuoted:
			w.parts(p.Parts)
			if p.Right.IsRecovered() {
				w.unterminated(p.Left, "double quote", `"`)
			}
		case *syntax.ParamExp:
			if p.Exp != nil {
				w.word(p.Exp.Word)
			}
			if p.Repl != nil {
				w.word(p.Repl.Orig)
				w.word(p.Repl.With)
			}
			if !p.Short && p.Rbrace.IsRecovered() {
				w.unterminated(p.Dollar, "${ expansion", "}")
			}
		case *syntax.CmdSubst:
			w.inSubst++
			w.stmts(p.Stmts, p.Last)
			w.inSubst--
			switch {
			case !p.Right.IsRecovered():
			case p.Backquotes:
				w.unterminated(p.Left, "` command substitution", "`")
			default:
				w.unterminated(p.Left, "$( command substitution", ")")
			}
		case *syntax.ProcSubst:
			w.inSubst++
			w.stmts(p.Stmts, p.Last)
			w.inSubst--
			if p.Rparen.IsRecovered() {
				w.unterminated(p.OpPos, "process substitution", ")")
			}
		case *syntax.ArithmExp:
			if p.Right.IsRecovered() {
				w.unterminated(p.Left, "$(( expansion", "))")
			}
		}
	}
}

// fileComments is the comment on each line of a file, by line: own is
// true when the comment has the line to itself.
func fileComments(chunks []chunk) map[int]comment {
	out := map[int]comment{}
	for _, c := range chunks {
		for _, cm := range c.comments {
			line := c.src.line(cm.Hash)
			text := c.src.commentText(&cm)
			if line == 1 && strings.HasPrefix(text, "!") {
				continue // shebang
			}
			own := ownLine(c.src.src, int(cm.Hash.Offset()))
			out[line] = comment{text: text, own: own, flagLike: own && looksLikeFlag(text)}
		}
	}
	return out
}

// comment is the comment on one line.
type comment struct {
	text     string
	own      bool // nothing else is on the line
	flagLike bool // a commented-out flag, not an explanation
}

// ownLine says whether the comment at off has its line to itself. The
// opening of an array counts as nothing: a comment there heads the
// array's elements ("ARGS=(  # parallelism").
func ownLine(src []byte, off int) bool {
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	before := strings.TrimSpace(string(src[start:off]))
	if before == "" {
		return true
	}
	name, ok := strings.CutSuffix(before, "=(")
	if !ok {
		return false
	}
	name, _ = strings.CutSuffix(strings.TrimSpace(name), "+")
	return isName(name)
}
