package script

import (
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Simple commands: assignments, arrays, the builtins that change what the
// interpreter knows (source, export, unset, read, shift, exit, printf -v),
// function calls, and launch commands.

func (it *interp) originOf(w *syntax.Word, array string) *origin {
	return it.originAt(w.Pos(), it.cur.raw(w), array)
}

func (it *interp) originAt(p syntax.Pos, raw, array string) *origin {
	org := &origin{file: it.curFile(), line: it.cur.line(p), raw: raw, array: array, frames: it.currentFrames()}
	org.comment = it.commentFor(org.file, org.line)
	return org
}

func (it *interp) simple(st *syntax.Stmt, c *syntax.CallExpr) {
	if len(c.Args) == 0 {
		it.assignAll(c.Assigns)
		return
	}
	var fields []field
	for _, w := range c.Args {
		fields = append(fields, it.expandWord(w, it.originOf(w, ""), true)...)
	}
	for _, a := range c.Assigns { // VAR=x cmd: for cmd only
		if a.Array == nil && a.Name != nil {
			it.assign(a, false)
		}
	}
	if len(fields) == 0 {
		return
	}
	name := fields[0].text
	if f, ok := it.funcs[name]; ok && fields[0].known {
		it.call(name, f, fields[1:])
		return
	}
	line := it.cur.line(c.Pos())
	switch name {
	case "source", ".":
		it.source(c, fields, line)
	case "export", "declare", "typeset", "local", "readonly":
		// written so that the parser took it for a command: "export" X=1
		for _, w := range c.Args[1:] {
			if n, app, val, ok := wordAssign(w); ok {
				raw := it.cur.raw(w)
				it.assignValue(n, app, &syntax.Word{Parts: val}, raw[strings.IndexByte(raw, '=')+1:], it.originOf(w, ""), true)
			}
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
			raw := it.cur.text(st)
			it.emitEnv(fields[2].text, raw, raw, fields[2].org)
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
			it.sticky = append(it.sticky, &frame{text: "after " + name + " at " + it.curFile() + ":" + itoa(line), taken: TakenNo})
		}
	case "eval":
		it.problem(line, "eval is not evaluated: flags it builds are not reported")
	default:
		if it.launch(fields) {
			it.launches = append(it.launches, name)
		}
	}
}

// decl is export / declare / local / readonly / typeset.
func (it *interp) decl(c *syntax.DeclClause) {
	// every word is expanded, as any command's: ${X:=v} assigns
	for _, a := range c.Args {
		if a.Value != nil {
			it.expandWord(a.Value, nil, true)
		}
	}
	switch c.Variant.Value {
	case "export", "declare", "typeset", "local", "readonly":
		it.assignAll(c.Args)
	}
}

// assignAll runs the assignments of a command without words: scalars
// first, then arrays.
func (it *interp) assignAll(as []*syntax.Assign) {
	for _, a := range as {
		if a.Array == nil && !a.Naked && a.Name != nil {
			it.assign(a, true)
		}
	}
	for _, a := range as {
		if a.Array != nil && a.Name != nil {
			it.arrayAssign(a)
		}
	}
}

// assign handles NAME=value; persist is false for VAR=x in front of a
// command, which sets nothing after it.
func (it *interp) assign(a *syntax.Assign, persist bool) {
	raw := ""
	if a.Value != nil {
		raw = it.cur.raw(a.Value)
	}
	it.assignValue(a.Name.Value, a.Append, a.Value, raw, it.originAt(a.Pos(), it.cur.raw(a), ""), persist)
}

func (it *interp) assignValue(name string, app bool, val *syntax.Word, raw string, org *origin, persist bool) {
	s, known := it.expandString(val)
	if app {
		old := it.lookup(name)
		s = old.val + s
		known = known && old.set && old.known
	}
	it.emitEnv(name, s, raw, org)
	if persist {
		it.setVar(name, s, known)
	}
}

// arrayItem is an element of NAME=( ... ) as written: a word, or a
// "# --flag value" line, a commented-out element.
type arrayItem struct {
	w    *syntax.Word
	out  string
	line int
}

func (it *interp) arrayItems(arr *syntax.ArrayExpr) []arrayItem {
	var items []arrayItem
	comments := func(cs []syntax.Comment) {
		for _, c := range cs {
			text := it.cur.commentText(&c)
			if ownLine(it.cur.src, int(c.Hash.Offset())) && looksLikeFlag(text) {
				items = append(items, arrayItem{out: text, line: it.cur.line(c.Hash)})
			}
		}
	}
	for _, e := range arr.Elems {
		split := len(e.Comments)
		if e.Value != nil {
			for i, c := range e.Comments {
				if c.Hash.After(e.Value.Pos()) {
					split = i
					break
				}
			}
		}
		comments(e.Comments[:split])
		if e.Value != nil {
			items = append(items, arrayItem{w: e.Value, line: it.cur.line(e.Value.Pos())})
		}
		comments(e.Comments[split:])
	}
	comments(arr.Last)
	return items
}

func (it *interp) arrayAssign(a *syntax.Assign) {
	name := a.Name.Value
	var elems []elem
	for _, e := range it.arrayItems(a.Array) {
		if e.w == nil {
			org := &origin{file: it.curFile(), line: e.line, raw: "# " + e.out, array: name,
				frames: append(it.currentFrames(), commentedOutFrame), commentedOut: true}
			org.comment = it.commentFor(org.file, org.line)
			elems = append(elems, elem{text: e.out, known: true, org: org})
			continue
		}
		for _, f := range it.expandWord(e.w, it.originOf(e.w, name), true) {
			elems = append(elems, elem{text: f.text, known: f.known, org: f.org})
		}
	}
	if len(elems) > maxArrayElems {
		elems = elems[:maxArrayElems]
	}
	it.work += 64 * len(elems)
	it.arrays = append(it.arrays, arrayDef{name: name, elems: elems})
	v := it.vars[name]
	if v == nil || !v.isArr {
		v = &variable{isArr: true, known: true}
		if old := it.vars[name]; old != nil && (a.Append || it.taken() != TakenYes) {
			v.arr = []elem{{text: old.val, known: old.known}}
		}
		it.vars[name] = v
	}
	// a branch that does not surely run adds its elements, marked by their
	// frames, rather than replacing what is there
	if a.Append || it.taken() != TakenYes {
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
		it.problem(it.cur.line(a.Pos()), "array "+name+" has more than 65536 elements: truncated")
		v.arr = v.arr[:maxArrayElems]
	}
}

func (it *interp) call(name string, f *function, args []field) {
	if it.callDepth >= 8 {
		return
	}
	it.called[name] = true
	it.callDepth++
	saved, savedArgs := it.cur, it.args
	it.cur, it.args = f.src, nil
	for _, a := range args {
		it.args = append(it.args, a.text)
	}
	nSticky := len(it.sticky)
	it.stmt(f.decl.Body)
	it.sticky = it.sticky[:nSticky]
	it.cur, it.args = saved, savedArgs
	it.callDepth--
}

func (it *interp) source(c *syntax.CallExpr, fields []field, line int) {
	if it.taken() == TakenNo {
		return
	}
	if len(fields) < 2 {
		it.problem(line, fields[0].text+": expected a file name")
		return
	}
	f := fields[1]
	raw := it.cur.raw(c.Args[len(c.Args)-1])
	if len(c.Args) > 1 {
		raw = it.cur.raw(c.Args[1])
	}
	resolved, how := it.resolveSource(f.text, f.known, it.curFile())
	it.s.Sources = append(it.s.Sources, Source{File: it.curFile(), Line: line, Raw: raw, Resolved: resolved, How: how})
	if resolved == "" {
		shown := f.text
		if f.known && !filepath.IsAbs(shown) {
			shown = filepath.Join(filepath.Dir(it.curFile()), shown)
		} else if f.known {
			shown = filepath.Clean(shown)
		}
		it.problem(line, "source "+raw+": "+shown+": no such file")
		return
	}
	if it.sourced++; it.sourced > maxSources {
		it.problem(line, "source "+raw+": more than 256 files sourced, the rest are skipped")
		return
	}
	if len(it.files) >= maxSourceDepth {
		it.problem(line, "source "+raw+": sourced files nested deeper than 16")
		return
	}
	for _, open := range it.files {
		if filepath.Clean(open) == filepath.Clean(resolved) {
			it.problem(line, "source "+raw+": "+resolved+" sources itself")
			return
		}
	}
	src, err := it.opt.read(resolved)
	if err != nil {
		it.problem(line, "source "+raw+": "+err.Error())
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
