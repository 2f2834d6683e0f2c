package script

import (
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The interpreter walks mvdan's syntax tree once, in order, without
// running anything: assignments update the variables it knows, source
// follows the file, and every branch is visited (its rows say whether it
// runs), so a flag in the branch that does not run is still reported.

type frame struct {
	text  string
	taken Taken
}

var commentedOutFrame = &frame{text: "commented out", taken: TakenNo}

type fileInfo struct {
	lines    []string
	comments map[int]comment
}

type arrayDef struct {
	name  string
	elems []elem
}

// function is a definition and the source its body was read from.
type function struct {
	decl *syntax.FuncDecl
	src  *source
}

type interp struct {
	s           *Script
	opt         Options
	parser      *syntax.Parser // files and bash -c strings
	snippets    *syntax.Parser // expressions read again after expansion
	cur         *source        // the source of the nodes being evaluated
	vars        map[string]*variable
	funcs       map[string]*function
	called      map[string]bool
	frames      []*frame
	sticky      []*frame // after an exit that surely runs: the rest does not
	args        []string
	files       []string // the files being run, innermost last
	info        map[string]*fileInfo
	arrays      []arrayDef
	undefined   map[string]bool
	steps       int
	arithDepth  int
	expandDepth int
	work        int // bytes produced by expansion
	sourced     int
	line        int // the line being expanded, for problems
	callDepth   int
	nesting     int      // compound commands open
	skipRest    bool     // nesting ran too deep: the rest of the file is not evaluated
	launches    []string // the launch commands seen, in order
}

func newInterp(s *Script, opt Options) *interp {
	return &interp{s: s, opt: opt, parser: newFileParser(), snippets: syntax.NewParser(syntax.Variant(syntax.LangBash)),
		cur: &source{file: s.Path}, vars: map[string]*variable{}, funcs: map[string]*function{},
		called: map[string]bool{}, args: append([]string(nil), opt.Args...), info: map[string]*fileInfo{},
		undefined: map[string]bool{}}
}

func (it *interp) curFile() string {
	if len(it.files) == 0 {
		return it.s.Path
	}
	return it.files[len(it.files)-1]
}

func (it *interp) problem(line int, msg string) {
	it.s.Problems = append(it.s.Problems, Problem{File: it.curFile(), Line: line, Msg: msg})
}

// runFile parses and walks one file: the script or a sourced file.
func (it *interp) runFile(name string, src []byte) {
	chunks := it.parse(name, src, 0)
	it.info[name] = &fileInfo{lines: strings.Split(string(src), "\n"), comments: fileComments(chunks)}
	it.files = append(it.files, name)
	nSticky := len(it.sticky)
	it.runChunks(chunks)
	if len(it.files) > 1 { // a return in a sourced file ends that file only
		it.sticky = it.sticky[:nSticky]
	}
	it.files = it.files[:len(it.files)-1]
}

// runString walks a bash -c string as part of the current file.
func (it *interp) runString(s string, line int) {
	it.runChunks(it.parse(it.curFile(), []byte(s), line-1))
}

func (it *interp) runChunks(chunks []chunk) {
	saved, skip := it.cur, it.skipRest
	for _, c := range chunks {
		it.cur = c.src
		it.run(c.stmts)
	}
	it.cur, it.skipRest = saved, skip
}

func (it *interp) run(stmts []*syntax.Stmt) {
	for _, st := range stmts {
		it.stmt(st)
	}
}

// taken is whether the current position runs.
func (it *interp) taken() Taken {
	t := TakenYes
	for _, f := range it.frames {
		t = tand(t, f.taken)
	}
	for _, f := range it.sticky {
		t = tand(t, f.taken)
	}
	return t
}

func (it *interp) push(text string, t Taken) {
	it.frames = append(it.frames, &frame{text: text, taken: t})
}
func (it *interp) pop() { it.frames = it.frames[:len(it.frames)-1] }

func (it *interp) currentFrames() []*frame {
	out := make([]*frame, 0, len(it.frames)+len(it.sticky))
	return append(append(out, it.frames...), it.sticky...)
}

func (it *interp) stmt(st *syntax.Stmt) {
	if st == nil || it.skipRest {
		return
	}
	it.steps++
	if it.work > maxWork && it.steps < maxSteps {
		it.problem(it.line, "expansions and rows exceed 16 MiB: the rest is not evaluated")
		it.steps = maxSteps + 1
	}
	if it.steps == maxSteps {
		it.problem(it.line, "too many commands: the rest is not evaluated")
	}
	if it.steps >= maxSteps {
		return
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		it.simple(st, c)
	case *syntax.DeclClause:
		it.decl(c)
	case *syntax.BinaryCmd:
		it.binaryCmd(c)
	case *syntax.TimeClause:
		it.stmt(c.Stmt)
	case *syntax.FuncDecl:
		if c.Name != nil && c.Name.Value != "" {
			it.funcs[c.Name.Value] = &function{decl: c, src: it.cur}
		}
	case *syntax.ArithmCmd:
		if it.taken() != TakenNo {
			it.arith(c.X, it.cur.inner(c.Left, 2, c.Right))
		}
	case *syntax.TestClause:
		// expanded as any command's words are: ${X:=v} assigns
		it.testWords(c.X)
		it.line = it.cur.line(c.Right)
	case *syntax.IfClause, *syntax.CaseClause, *syntax.ForClause, *syntax.WhileClause, *syntax.Block, *syntax.Subshell:
		it.compound(st)
	}
}

// compound walks a compound command, unless commands nest too deeply.
func (it *interp) compound(st *syntax.Stmt) {
	if it.nesting >= maxNesting {
		it.problem(it.cur.line(st.Pos()), "commands nested too deeply: the rest of the file is skipped")
		it.skipRest = true
		return
	}
	it.nesting++
	defer func() { it.nesting-- }()
	switch c := st.Cmd.(type) {
	case *syntax.IfClause:
		it.ifCmd(c)
	case *syntax.CaseClause:
		it.caseCmd(c)
	case *syntax.ForClause:
		// the body may run any number of times: what it sets is unknown
		it.push(it.loopHeader(c), TakenUnknown)
		for _, v := range it.loopVars(c) {
			it.setVar(v, "", false)
		}
		it.run(c.Do)
		it.pop()
	case *syntax.WhileClause:
		kw := "while"
		if c.Until {
			kw = "until"
		}
		header := kw
		if len(c.Cond) > 0 {
			header = strings.TrimSpace(it.cur.slice(c.WhilePos, stmtEnd(c.Cond[len(c.Cond)-1])))
		}
		it.push(header, TakenUnknown)
		it.run(c.Do)
		it.pop()
	case *syntax.Block:
		it.run(c.Stmts)
	case *syntax.Subshell:
		it.run(c.Stmts)
	}
}

// binaryCmd walks a && b || c, each item under one frame: the item
// before it and whether the chain so far lets it run; or a pipeline.
func (it *interp) binaryCmd(c *syntax.BinaryCmd) {
	items, ops := chain(c)
	if !isAndOr(c.Op) {
		it.run(items)
		return
	}
	it.stmt(items[0])
	st := it.status(items[0], true)
	runs := TakenYes
	for i, op := range ops {
		if op == syntax.AndStmt {
			runs = tand(runs, st)
		} else {
			runs = tand(runs, tnot(st))
		}
		it.push(it.cur.text(items[i])+" "+op.String(), runs)
		it.stmt(items[i+1])
		it.pop()
		st = it.status(items[i+1], true)
	}
}

func (it *interp) ifCmd(c *syntax.IfClause) {
	prev := TakenNo // whether an earlier clause ran
	var texts []string
	for kw := "if"; c != nil; c, kw = c.Else, "elif" {
		if !c.ThenPos.IsValid() && !c.ThenPos.IsRecovered() { // else
			it.push("else (not: "+strings.Join(texts, "; ")+")", tnot(prev))
			it.run(c.Then)
			it.pop()
			return
		}
		cond := it.cond(c.Cond)
		text := it.cur.listText(c.Cond)
		it.push(kw+" "+text, tand(tnot(prev), cond))
		it.run(c.Then)
		it.pop()
		prev = tor(prev, cond)
		texts = append(texts, text)
	}
}

func (it *interp) caseCmd(c *syntax.CaseClause) {
	subject, known := it.expandString(c.Word)
	head := "case"
	if c.Word != nil {
		head = strings.TrimSpace(it.cur.slice(c.Case, c.Word.End()))
	}
	prev := TakenNo
	for _, item := range c.Items {
		m := TakenNo
		for _, p := range item.Patterns {
			pat, ok := it.pattern(p)
			if !known || !ok {
				m = tor(m, TakenUnknown)
			} else {
				m = tor(m, tbool(globMatch(pat, subject)))
			}
		}
		text := ""
		if n := len(item.Patterns); n > 0 {
			text = it.cur.slice(item.Patterns[0].Pos(), item.Patterns[n-1].End())
		}
		it.push(head+" in "+text+")", tand(tnot(prev), m))
		it.run(item.Stmts)
		it.pop()
		prev = tor(prev, m)
	}
}

func (it *interp) loopHeader(c *syntax.ForClause) string {
	if c.Loop == nil {
		return "for"
	}
	return strings.TrimSpace(it.cur.slice(c.ForPos, c.Loop.End()))
}

// loopVars are the variables a loop sets: unknown inside the body. For
// for ((...)) that is every name in the header.
func (it *interp) loopVars(c *syntax.ForClause) []string {
	switch l := c.Loop.(type) {
	case *syntax.WordIter:
		if l.Name != nil {
			return []string{l.Name.Value}
		}
	case *syntax.CStyleLoop:
		var vars []string
		text := it.cur.inner(l.Lparen, 2, l.Rparen)
		for _, f := range strings.FieldsFunc(text, func(r rune) bool { return !isNameChar(byte(r)) || r > 127 }) {
			if isName(f) {
				vars = append(vars, f)
			}
		}
		return vars
	}
	return nil
}

// testWords expands the operands of [[ ]] in order.
func (it *interp) testWords(x syntax.TestExpr) {
	eachTestWord(x, func(w *syntax.Word) { it.expandWord(w, nil, true) })
}

// setVar assigns a scalar where the current branch runs; in a branch that
// may or may not run the variable becomes unknown (unless the value is the
// same either way); in one that does not run nothing changes.
func (it *interp) setVar(name, val string, known bool) {
	if len(val) > maxValueBytes {
		it.problem(0, "value of "+name+" is longer than 1 MiB: kept as unknown")
		val, known = "", false
	}
	switch it.taken() {
	case TakenNo:
		return
	case TakenUnknown:
		if old, ok := it.vars[name]; !ok || old.isArr || !old.known || old.val != val {
			// set or not, depending on the branch: nothing is known of it
			val, known = "", false
		}
	}
	it.vars[name] = &variable{val: val, known: known}
}

func (it *interp) undefinedArray(name string) {
	if !it.undefined[name] {
		it.undefined[name] = true
		it.problem(it.line, "array "+name+" is expanded but never defined (a sourced file may be missing)")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// finish reports arrays no launch command used and the flags of functions
// never called.
func (it *interp) finish() {
	if it.work > maxWork {
		return // already cut short
	}
	names := make([]string, 0, len(it.funcs))
	for name := range it.funcs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if f := it.funcs[name]; !it.called[name] {
			it.push("function "+name+" (never called)", TakenNo)
			saved := it.cur
			it.cur = f.src
			it.stmt(f.decl.Body)
			it.cur = saved
			it.pop()
		}
	}
	// an array defined twice at the same place (a file sourced twice)
	// is reported once
	type place struct {
		file string
		line int
		raw  string
	}
	used := map[place]bool{}
	for _, a := range it.arrays {
		for _, e := range a.elems {
			if e.org != nil && e.org.emitted {
				used[place{e.org.file, e.org.line, e.org.raw}] = true
			}
		}
	}
	for _, a := range it.arrays {
		var rest []field
		for _, e := range a.elems {
			if e.org != nil && !e.org.emitted && !used[place{e.org.file, e.org.line, e.org.raw}] {
				rest = append(rest, field{text: e.text, known: e.known, org: e.org})
			}
		}
		it.emitArgs("", rest, field{})
	}
}

// commentFor is the comment attached to a line: the comment lines right
// above it, a # NOTE comment heading its block, and the comment at its end.
func (it *interp) commentFor(file string, line int) string {
	fi := it.info[file]
	if fi == nil {
		return ""
	}
	var above []string
	// comment blocks are short: looking a bounded way up keeps a file
	// of thousands of lines linear
	const reach = 64
	l := line - 1
	for ; l >= 1 && l >= line-reach; l-- {
		c, ok := fi.comments[l]
		if !ok || !c.own || c.flagLike {
			break
		}
		above = append([]string{c.text}, above...)
	}
	var parts []string
	parts = append(parts, above...)
	for l := line - 1; l >= 1 && l >= line-reach && l <= len(fi.lines); l-- {
		s := strings.TrimSpace(fi.lines[l-1])
		if s == "" || strings.HasSuffix(s, "(") || s == ")" {
			break
		}
		if c, ok := fi.comments[l]; ok && c.own && isNote(c.text) {
			if !contains(parts, c.text) {
				parts = append([]string{c.text}, parts...)
			}
			break
		}
	}
	if c, ok := fi.comments[line]; ok && !c.own {
		parts = append(parts, c.text)
	}
	return strings.Join(parts, "\n")
}

func isNote(s string) bool {
	u := strings.ToUpper(s)
	return strings.HasPrefix(u, "NOTE(") || strings.HasPrefix(u, "NOTE:")
}
