package script

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Expansion follows bash where the value is known and keeps the reference
// text ("$HOST_IP", "$(date ...)") where it is not: an unknown part is
// never replaced by a guess, and never split into words.

type variable struct {
	val   string
	known bool
	isArr bool
	arr   []elem
}

// elem is one array element and where it was written.
type elem struct {
	text  string
	known bool
	org   *origin
}

// origin is where a word was written and under which branches.
type origin struct {
	file         string
	line         int
	raw          string
	array        string
	frames       []*frame
	comment      string
	commentedOut bool
	emitted      bool // a launch command used it
}

// field is one word after expansion.
type field struct {
	text  string
	known bool
	org   *origin
}

type fieldBuilder struct {
	work    *int // bytes produced, against maxWork
	out     []field
	cur     strings.Builder
	known   bool
	content bool
	org     *origin
	def     *origin
	split   bool
}

func (b *fieldBuilder) add(s string, known bool) {
	if *b.work += len(s); *b.work > maxWork {
		return // the interpreter stops at the next command
	}
	b.cur.WriteString(s)
	b.known = b.known && known
	if s != "" {
		b.content = true
	}
}

func (b *fieldBuilder) end() {
	*b.work += 64 // a field costs more than its bytes
	if b.content {
		org := b.org
		if org == nil {
			org = b.def
		}
		b.out = append(b.out, field{text: b.cur.String(), known: b.known, org: org})
	}
	b.cur.Reset()
	b.known, b.content, b.org = true, false, nil
}

// addSplit adds an unquoted known value, splitting it into fields at
// blanks as bash does.
func (b *fieldBuilder) addSplit(s string, org *origin) {
	if !b.split {
		b.add(s, true)
		return
	}
	for i, piece := range strings.FieldsFunc(s, isIFS) {
		if i > 0 || strings.IndexFunc(s[:1], isIFS) == 0 {
			b.end()
		}
		if !b.content && org != nil {
			b.org = org
		}
		b.add(piece, true)
	}
	if s != "" && strings.LastIndexFunc(s, isIFS) == len(s)-1 {
		b.end()
	}
}

func isIFS(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }

// addUnknownSplit adds an unquoted value that is only partly known, split
// at the blanks outside the references it still holds ("--path ${PWD}/x"
// is two words; "$(date +%F %T)" stays one).
func (b *fieldBuilder) addUnknownSplit(s string, org *origin) {
	if !b.split {
		b.add(s, false)
		return
	}
	for i, piece := range splitOutsideRefs(s) {
		if i > 0 {
			b.end()
		}
		if !b.content && org != nil {
			b.org = org
		}
		b.add(piece, false)
		b.content = true
	}
}

func splitOutsideRefs(s string) []string {
	var out []string
	depth, start := 0, -1
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote == 0 && depth == 0 && isIFS(rune(c)) {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '$' && i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '('):
			depth++
			i++
		case depth > 0 && (c == '{' || c == '('):
			depth++
		case depth > 0 && (c == '}' || c == ')'):
			depth--
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// expandWord expands w into fields; split says whether unquoted results
// are split into words (command arguments, array elements) or not
// (assignments, [[ ]], case).
func (it *interp) expandWord(w *syntax.Word, org *origin, split bool) []field {
	b := &fieldBuilder{work: &it.work, known: true, def: org, split: split}
	if w == nil || len(w.Parts) == 0 {
		return nil
	}
	if line := it.cur.line(w.Pos()); line > 0 && len(it.files) > 0 {
		it.line = line
	}
	if it.expandDepth >= maxExpandDepth {
		b.add(it.cur.raw(w), false)
		b.end()
		return b.out
	}
	it.expandDepth++
	it.expandParts(b, w.Parts, false)
	it.expandDepth--
	b.end()
	return b.out
}

// expandString expands w into one string.
func (it *interp) expandString(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", true
	}
	fs := it.expandWord(w, nil, false)
	var parts []string
	known := true
	for _, f := range fs {
		parts = append(parts, f.text)
		known = known && f.known
	}
	return strings.Join(parts, " "), known
}

func (it *interp) expandParts(b *fieldBuilder, parts []syntax.WordPart, quoted bool) {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if v := it.cur.litValue(p); quoted {
				b.add(unescapeDouble(v), true)
			} else {
				b.add(unescape(v), true)
			}
		case *syntax.SglQuoted:
			text := p.Value
			if p.Right.IsRecovered() || it.cur.patchedIn(p.Left, p.Right) { // as written
				text = it.cur.inner(p.Left, 1+b2i(p.Dollar), syntax.Pos{})
			}
			if p.Dollar {
				text = ansiC(text)
			}
			b.add(text, true)
			b.content = true
		case *syntax.DblQuoted:
			if len(p.Parts) == 1 && isAtList(p.Parts[0]) {
				it.expandParam(b, p.Parts[0].(*syntax.ParamExp), true) // "${A[@]}" of nothing is no word at all
				continue
			}
			b.content = true
			it.expandParts(b, p.Parts, true)
		case *syntax.ParamExp:
			it.expandParam(b, p, quoted)
		case *syntax.CmdSubst:
			text := it.cur.substText(p)
			s, ok := it.cmdSub(text)
			it.addValue(b, s, ok, quoted, "$("+text+")")
		case *syntax.ArithmExp:
			text := it.cur.arithText(p)
			if v, ok := it.arith(p.X, text); ok {
				it.addValue(b, strconv.FormatInt(v, 10), true, quoted, "")
			} else {
				b.add("$(("+text+"))", false)
			}
		case *syntax.ExtGlob:
			b.add(it.cur.raw(p), true)
		case *syntax.ProcSubst:
			// <(cmd) stands for a file the command writes: no value here
		}
	}
}

// substText is the command inside $( ) or ` `.
func (s *source) substText(c *syntax.CmdSubst) string {
	if c.Backquotes {
		return s.inner(c.Left, 1, c.Right)
	}
	return s.inner(c.Left, 2, c.Right)
}

// arithText is the expression inside $(( )) or $[ ].
func (s *source) arithText(a *syntax.ArithmExp) string {
	if a.Bracket {
		return s.inner(a.Left, 2, a.Right)
	}
	return s.inner(a.Left, 3, a.Right)
}

func (it *interp) addValue(b *fieldBuilder, s string, known, quoted bool, ref string) {
	switch {
	case !known:
		b.add(ref, false)
	case quoted:
		b.add(s, true)
	default:
		b.addSplit(s, nil)
	}
}

// isAtList: "${A[@]}" or "$@", each element a word of its own.
func isAtList(p syntax.WordPart) bool {
	pe, ok := p.(*syntax.ParamExp)
	if !ok || pe.Param == nil || pe.Exp != nil || pe.Repl != nil || pe.Slice != nil {
		return false
	}
	if pe.Index != nil {
		return indexLit(pe.Index) == "@"
	}
	return pe.Param.Value == "@" && !pe.Length && !pe.Excl
}

// indexLit is the subscript of ${A[i]} when it is a plain word.
func indexLit(x syntax.ArithmExpr) string {
	if w, ok := x.(*syntax.Word); ok {
		if s, ok := lit(w); ok {
			return s
		}
	}
	return ""
}

// expandParam expands $name or ${...}.
func (it *interp) expandParam(b *fieldBuilder, pe *syntax.ParamExp, quoted bool) {
	ref := it.cur.slice(pe.Pos(), pe.End())
	if pe.Param == nil || pe.Excl || pe.Names != 0 || pe.Width || pe.IsSet || pe.Flags != nil ||
		pe.NestedParam != nil || len(pe.Modifiers) > 0 {
		b.add(ref, false) // indirect or not bash: unknown
		return
	}
	name, index := pe.Param.Value, ""
	if pe.Index != nil {
		index = indexLit(pe.Index)
	}
	hasOp := pe.Exp != nil || pe.Repl != nil || pe.Slice != nil
	if pe.Length { // ${#X} ${#A[@]}
		v := it.lookup(name)
		switch {
		case !v.set || hasOp:
			b.add(ref, false)
		case index == "@" || index == "*":
			b.add(strconv.Itoa(len(v.list)), v.listKnown())
		default:
			b.add(strconv.Itoa(len([]rune(v.val))), v.known)
		}
		return
	}
	v := it.lookup(name)
	list := name == "@" || name == "*" || index == "@" || index == "*"
	if list && !hasOp {
		if !v.set {
			if name != "@" && name != "*" {
				it.undefinedArray(name)
			}
			return
		}
		it.addList(b, v.list, quoted && (name == "@" || index == "@"), quoted)
		return
	}
	if pe.Index != nil && !list {
		v = v.at(it, pe.Index)
	}
	val, known, ok := it.applyOp(name, v, pe)
	if !ok || !known {
		// an unknown value shows what is known of it ("${HOME}/verl"),
		// else the reference itself
		if !ok || val == "" {
			val = ref
		}
		if quoted || val == ref {
			b.add(val, false)
		} else {
			b.addUnknownSplit(val, nil)
		}
		return
	}
	if quoted {
		b.add(val, true)
	} else {
		b.addSplit(val, nil)
	}
}

// addList adds array elements: "${A[@]}" keeps each element a word of its
// own, with the element's origin; unquoted elements are split further.
func (it *interp) addList(b *fieldBuilder, list []elem, separate, quoted bool) {
	if !separate && quoted { // "${A[*]}": one word
		var parts []string
		known := true
		for _, e := range list {
			parts = append(parts, e.text)
			known = known && e.known
		}
		b.add(strings.Join(parts, " "), known)
		if len(list) > 0 {
			b.content = true
		}
		return
	}
	for i, e := range list {
		if *b.work > maxWork {
			break
		}
		if i > 0 {
			b.end()
		}
		if !b.content {
			b.org = e.org
		}
		switch {
		case quoted || e.org != nil && e.org.commentedOut:
			b.add(e.text, e.known)
			b.content = true
		case !e.known:
			b.addUnknownSplit(e.text, e.org)
		default:
			b.addSplit(e.text, e.org)
		}
	}
}

type value struct {
	set, known bool
	val        string
	list       []elem
}

func (v value) listKnown() bool {
	for _, e := range v.list {
		if !e.known {
			return false
		}
	}
	return v.known
}

func (v value) at(it *interp, index syntax.ArithmExpr) value {
	i, ok := it.arithNode(index)
	if !ok || !v.set {
		return value{set: v.set}
	}
	if i < 0 {
		i += int64(len(v.list))
	}
	if i < 0 || i >= int64(len(v.list)) {
		return value{known: true}
	}
	e := v.list[i]
	return value{set: true, known: e.known, val: e.text, list: []elem{e}}
}

// lookup reads a variable: script assignments first, then Options.Env,
// then positional parameters and the few special names the parser knows.
func (it *interp) lookup(name string) value {
	if v, ok := it.vars[name]; ok {
		if v.isArr {
			val := ""
			if len(v.arr) > 0 {
				val = v.arr[0].text
			}
			return value{set: true, known: v.known && (len(v.arr) == 0 || v.arr[0].known), val: val, list: v.arr}
		}
		return value{set: true, known: v.known, val: v.val, list: []elem{{text: v.val, known: v.known}}}
	}
	if s, ok := it.opt.Env[name]; ok {
		return value{set: true, known: true, val: s, list: []elem{{text: s, known: true}}}
	}
	switch name {
	case "@", "*":
		var list []elem
		for _, a := range it.args {
			list = append(list, elem{text: a, known: true})
		}
		return value{set: true, known: true, val: strings.Join(it.args, " "), list: list}
	case "#":
		return value{set: true, known: true, val: strconv.Itoa(len(it.args))}
	case "0":
		return value{set: true, known: true, val: it.s.Path}
	case "BASH_SOURCE":
		f := it.curFile()
		return value{set: true, known: true, val: f, list: []elem{{text: f, known: true}}}
	}
	if n, err := strconv.Atoi(name); err == nil && n >= 1 {
		if n <= len(it.args) {
			return value{set: true, known: true, val: it.args[n-1]}
		}
	}
	return value{}
}
