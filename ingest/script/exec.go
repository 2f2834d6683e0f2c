package script

import (
	"path/filepath"
	"sort"
	"strings"
)

// The interpreter walks the syntax tree once, in order, without running
// anything: assignments update the variables it knows, source follows the
// file, and every branch is visited (its rows say whether it runs), so a
// flag in the branch that does not run is still reported.

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

type interp struct {
	s           *Script
	opt         Options
	vars        map[string]*variable
	funcs       map[string]*funcNode
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
	launches    []string // the launch commands seen, in order
}

func newInterp(s *Script, opt Options) *interp {
	return &interp{s: s, opt: opt, vars: map[string]*variable{}, funcs: map[string]*funcNode{},
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

// runFile lexes, parses and walks one file: the script or a sourced file.
func (it *interp) runFile(name string, src []byte) {
	lx := newLexer(name, src, 0, &it.s.Problems)
	nodes := parseSource(lx)
	it.info[name] = &fileInfo{lines: strings.Split(string(src), "\n"), comments: lx.comments}
	it.files = append(it.files, name)
	nSticky := len(it.sticky)
	it.run(nodes)
	if len(it.files) > 1 { // a return in a sourced file ends that file only
		it.sticky = it.sticky[:nSticky]
	}
	it.files = it.files[:len(it.files)-1]
}

// runString walks a bash -c string as part of the current file.
func (it *interp) runString(s string, line int) {
	lx := newLexer(it.curFile(), []byte(s), line-1, &it.s.Problems)
	it.run(parseSource(lx))
}

func (it *interp) run(nodes []node) {
	for _, n := range nodes {
		it.exec(n)
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

func (it *interp) exec(n node) {
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
	switch n := n.(type) {
	case *simpleCmd:
		it.simple(n)
	case *andOrNode:
		// a && b || c: each item runs under one frame, the item before it
		// and whether the chain so far lets it run
		it.exec(n.items[0])
		st := it.status(n.items[0], true)
		runs := TakenYes
		for i, op := range n.ops {
			if op == "&&" {
				runs = tand(runs, st)
			} else {
				runs = tand(runs, tnot(st))
			}
			it.push(n.raws[i]+" "+op, runs)
			it.exec(n.items[i+1])
			it.pop()
			st = it.status(n.items[i+1], true)
		}
	case *pipeNode:
		for _, c := range n.cmds {
			it.exec(c)
		}
	case *ifNode:
		it.ifCmd(n)
	case *caseNode:
		it.caseCmd(n)
	case *loopNode:
		// the body may run any number of times: what it sets is unknown
		it.push(n.header, TakenUnknown)
		for _, v := range n.vars {
			it.setVar(v, "", false)
		}
		it.run(n.body)
		it.pop()
	case *groupNode:
		it.run(n.body)
	case *funcNode:
		if n.name != "" {
			it.funcs[n.name] = n
		}
	case *arithNode:
		if it.taken() != TakenNo {
			it.arith(n.expr)
		}
	}
}

func (it *interp) ifCmd(n *ifNode) {
	prev := TakenNo // whether an earlier clause ran
	var texts []string
	for _, c := range n.clauses {
		cond := it.cond(c.cond)
		t := tand(tnot(prev), cond)
		it.push(c.kw+" "+c.text, t)
		it.run(c.body)
		it.pop()
		prev = tor(prev, cond)
		texts = append(texts, c.text)
	}
	if n.hasElse {
		it.push("else (not: "+strings.Join(texts, "; ")+")", tnot(prev))
		it.run(n.els)
		it.pop()
	}
}

func (it *interp) caseCmd(n *caseNode) {
	subject, known := it.expandString(n.w)
	prev := TakenNo
	for _, item := range n.items {
		m := TakenNo
		for _, p := range item.pats {
			pat, ok := it.pattern(p)
			if !known || !ok {
				m = tor(m, TakenUnknown)
			} else {
				m = tor(m, tbool(globMatch(pat, subject)))
			}
		}
		it.push(n.head+" in "+item.text+")", tand(tnot(prev), m))
		it.run(item.body)
		it.pop()
		prev = tor(prev, m)
	}
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

func (it *interp) originOf(w *word, array string) *origin {
	org := &origin{file: it.curFile(), line: w.line, raw: w.raw, array: array, frames: it.currentFrames()}
	org.comment = it.commentFor(org.file, org.line)
	return org
}

func (it *interp) simple(c *simpleCmd) {
	if len(c.words) == 0 {
		for _, w := range c.assigns {
			it.assign(w, true)
		}
		for _, a := range c.arrays {
			it.arrayAssign(a)
		}
		return
	}
	var fields []field
	for _, w := range c.words {
		fields = append(fields, it.expandWord(w, it.originOf(w, ""), true)...)
	}
	for _, w := range c.assigns { // VAR=x cmd: for cmd only
		it.assign(w, false)
	}
	if len(fields) == 0 {
		return
	}
	name := fields[0].text
	if f, ok := it.funcs[name]; ok && fields[0].known {
		it.call(name, f, fields[1:])
		return
	}
	switch name {
	case "source", ".":
		it.source(c, fields)
	case "export", "declare", "typeset", "local", "readonly":
		for _, w := range c.words[1:] {
			if isAssignWord(w) {
				it.assign(w, true)
			}
		}
		for _, a := range c.arrays {
			it.arrayAssign(a)
		}
	case "unset":
		for _, f := range fields[1:] {
			if isName(f.text) && it.taken() == TakenYes {
				delete(it.vars, f.text)
			} else if isName(f.text) {
				it.setVar(f.text, "", false)
			}
		}
	case "printf":
		if len(fields) > 2 && fields[1].text == "-v" && isName(fields[2].text) {
			it.emitEnv(fields[2].text, c.raw, c.raw, fields[2].org)
			it.setVar(fields[2].text, "", false)
		}
	case "read", "mapfile", "readarray":
		for _, f := range fields[1:] {
			if isName(f.text) {
				it.setVar(f.text, "", false)
			}
		}
	case "shift":
		if it.taken() == TakenYes && len(it.args) > 0 {
			it.args = it.args[1:]
		}
	case "exit", "return":
		// only an exit that surely runs ends the script: an exit behind an
		// unknown guard ([ -f x ] || exit 1) is assumed not to fire
		if it.taken() == TakenYes {
			it.sticky = append(it.sticky, &frame{text: "after " + name + " at " + it.curFile() + ":" + itoa(c.line), taken: TakenNo})
		}
	case "eval":
		it.problem(c.line, "eval is not evaluated: flags it builds are not reported")
	default:
		if it.launch(fields) {
			it.launches = append(it.launches, name)
		}
	}
}

func (it *interp) call(name string, f *funcNode, args []field) {
	if it.callDepth >= 8 {
		return
	}
	it.called[name] = true
	it.callDepth++
	saved := it.args
	it.args = nil
	for _, a := range args {
		it.args = append(it.args, a.text)
	}
	nSticky := len(it.sticky)
	it.exec(f.body)
	it.sticky = it.sticky[:nSticky]
	it.args = saved
	it.callDepth--
}

// assign handles NAME=value; persist is false for VAR=x in front of a
// command, which sets nothing after it.
func (it *interp) assign(w *word, persist bool) {
	name, app, val, ok := splitAssign(w)
	if !ok {
		return
	}
	s, known := it.expandString(val)
	if app {
		old := it.lookup(name)
		s = old.val + s
		known = known && old.set && old.known
	}
	it.emitEnv(name, s, val.raw, it.originOf(w, ""))
	if persist {
		it.setVar(name, s, known)
	}
}

func (it *interp) arrayAssign(a *arrayLit) {
	var elems []elem
	for _, e := range a.elems {
		if e.commentedOut != "" {
			org := &origin{file: it.curFile(), line: e.line, raw: "# " + e.commentedOut, array: a.name,
				frames: append(it.currentFrames(), commentedOutFrame), commentedOut: true}
			org.comment = it.commentFor(org.file, org.line)
			elems = append(elems, elem{text: e.commentedOut, known: true, org: org})
			continue
		}
		for _, f := range it.expandWord(e.w, it.originOf(e.w, a.name), true) {
			elems = append(elems, elem{text: f.text, known: f.known, org: f.org})
		}
	}
	if len(elems) > maxArrayElems {
		elems = elems[:maxArrayElems]
	}
	it.work += 64 * len(elems)
	it.arrays = append(it.arrays, arrayDef{name: a.name, elems: elems})
	v := it.vars[a.name]
	if v == nil || !v.isArr {
		v = &variable{isArr: true, known: true}
		if old := it.vars[a.name]; old != nil && (a.append || it.taken() != TakenYes) {
			v.arr = []elem{{text: old.val, known: old.known}}
		}
		it.vars[a.name] = v
	}
	// a branch that does not surely run adds its elements, marked by their
	// frames, rather than replacing what is there
	if a.append || it.taken() != TakenYes {
		v.arr = append(v.arr, elems...)
	} else {
		// elements from branches that do not run stay, marked not taken:
		// they are the alternatives this assignment stands beside
		var kept []elem
		for _, e := range v.arr {
			if e.org != nil && framesTaken(e.org.frames) == TakenNo {
				kept = append(kept, e)
			}
		}
		v.arr = append(kept, elems...)
	}
	if len(v.arr) > maxArrayElems {
		it.problem(a.line, "array "+a.name+" has more than 65536 elements: truncated")
		v.arr = v.arr[:maxArrayElems]
	}
}

func (it *interp) undefinedArray(name string) {
	if !it.undefined[name] {
		it.undefined[name] = true
		it.problem(it.line, "array "+name+" is expanded but never defined (a sourced file may be missing)")
	}
}

func (it *interp) source(c *simpleCmd, fields []field) {
	if it.taken() == TakenNo {
		return
	}
	if len(fields) < 2 {
		it.problem(c.line, fields[0].text+": expected a file name")
		return
	}
	f := fields[1]
	raw := c.words[len(c.words)-1].raw
	if len(c.words) > 1 {
		raw = c.words[1].raw
	}
	resolved, how := it.resolveSource(f.text, f.known, it.curFile())
	it.s.Sources = append(it.s.Sources, Source{File: it.curFile(), Line: c.line, Raw: raw, Resolved: resolved, How: how})
	if resolved == "" {
		shown := f.text
		if f.known && !filepath.IsAbs(shown) {
			shown = filepath.Join(filepath.Dir(it.curFile()), shown)
		} else if f.known {
			shown = filepath.Clean(shown)
		}
		it.problem(c.line, "source "+raw+": "+shown+": no such file")
		return
	}
	if it.sourced++; it.sourced > maxSources {
		it.problem(c.line, "source "+raw+": more than 256 files sourced, the rest are skipped")
		return
	}
	if len(it.files) >= maxSourceDepth {
		it.problem(c.line, "source "+raw+": sourced files nested deeper than 16")
		return
	}
	for _, open := range it.files {
		if filepath.Clean(open) == filepath.Clean(resolved) {
			it.problem(c.line, "source "+raw+": "+resolved+" sources itself")
			return
		}
	}
	src, err := it.opt.read(resolved)
	if err != nil {
		it.problem(c.line, "source "+raw+": "+err.Error())
		return
	}
	if p, bad := notText(resolved, src); bad {
		it.s.Problems = append(it.s.Problems, p)
		return
	}
	if !contains(it.s.Files, resolved) {
		it.s.Files = append(it.s.Files, resolved)
	}
	it.runFile(resolved, src)
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
			it.exec(f.body)
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
