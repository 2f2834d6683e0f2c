package script

import "strings"

// The parser builds a small syntax tree: enough structure to know which
// branch a line is in, nothing more. Syntax errors become problems and the
// parser carries on with what follows.

type node any

type simpleCmd struct {
	assigns []*word // NAME=value words before the command
	arrays  []*arrayLit
	words   []*word
	line    int
	raw     string
}

type andOrNode struct {
	items []node
	ops   []string // ops[i] joins items[i] and items[i+1]
	raws  []string // source text of each item
}

type pipeNode struct {
	cmds []node
	neg  bool
}

type ifClause struct {
	kw   string // if or elif
	cond []node
	text string
	body []node
}

type ifNode struct {
	clauses []ifClause
	els     []node
	hasElse bool
	line    int
}

type caseItem struct {
	pats []*word
	text string
	body []node
}

type caseNode struct {
	w     *word
	head  string
	items []caseItem
	line  int
}

type loopNode struct {
	header string
	vars   []string // loop variables: unknown inside the body
	body   []node
	line   int
}

type groupNode struct{ body []node }

type funcNode struct {
	name string
	body node
	line int
}

type arithNode struct {
	expr string
	line int
}

type parser struct {
	lx      *lexer
	ahead   []token
	lastEnd int // end of the last consumed token that is not a separator
	depth   int
	n       int // tokens consumed
	// gaveUp: nesting ran too deep and the rest of the file was skipped;
	// the problems that follow (every open if without its fi) are only
	// echoes of that one, and are not reported
	gaveUp bool
}

func parseSource(lx *lexer) []node {
	p := &parser{lx: lx}
	out := p.list(nil)
	for p.peek().kind != tEOF { // a stray ) or ;; at top level
		t := p.advance()
		p.problemAt(t, "unexpected "+strings.TrimSpace(t.text))
		out = append(out, p.list(nil)...)
	}
	return out
}

func (p *parser) peek() token {
	if len(p.ahead) == 0 {
		p.ahead = append(p.ahead, p.lx.next())
	}
	return p.ahead[0]
}

func (p *parser) peek2() token {
	p.peek()
	if len(p.ahead) < 2 {
		p.ahead = append(p.ahead, p.lx.next())
	}
	return p.ahead[1]
}

func (p *parser) advance() token {
	t := p.peek()
	p.ahead = p.ahead[1:]
	p.n++
	if t.kind != tNewline && !(t.kind == tOp && (t.text == ";" || t.text == "&")) && t.kind != tEOF {
		p.lastEnd = t.end
	}
	return t
}

func (p *parser) problemAt(t token, msg string) {
	if p.gaveUp {
		return
	}
	*p.lx.probs = append(*p.lx.probs, Problem{File: p.lx.file, Line: t.line, Msg: msg})
}

func keyword(t token) string {
	if t.kind != tWord {
		return ""
	}
	s, _ := t.word.lit()
	return s
}

func isOp(t token, ops ...string) bool {
	if t.kind != tOp {
		return false
	}
	for _, o := range ops {
		if t.text == o {
			return true
		}
	}
	return false
}

func (p *parser) skipNewlines() {
	for p.peek().kind == tNewline {
		p.advance()
	}
}

func (p *parser) text(from int) string {
	if from >= p.lastEnd || p.lastEnd > len(p.lx.src) {
		return ""
	}
	return strings.TrimSpace(string(p.lx.src[from:p.lastEnd]))
}

// list parses commands until a stop keyword in command position, a closing
// operator or the end of input.
func (p *parser) list(stops map[string]bool) []node {
	var out []node
	for {
		for t := p.peek(); t.kind == tNewline || isOp(t, ";", "&"); t = p.peek() {
			p.advance()
		}
		t := p.peek()
		if t.kind == tEOF || isOp(t, ")", ";;", ";&", ";;&") || stops[keyword(t)] {
			return out
		}
		before := p.n
		if n := p.andOr(); n != nil {
			out = append(out, n)
		}
		if p.n == before { // nothing parsed: skip the token so that we progress
			t := p.advance()
			p.problemAt(t, "unexpected "+strings.TrimSpace(t.text))
		}
	}
}

func (p *parser) andOr() node {
	start := p.peek().off
	first := p.pipeline()
	if !isOp(p.peek(), "&&", "||") {
		return first
	}
	ao := &andOrNode{items: []node{first}, raws: []string{p.text(start)}}
	for isOp(p.peek(), "&&", "||") {
		ao.ops = append(ao.ops, p.advance().text)
		p.skipNewlines()
		start = p.peek().off
		ao.items = append(ao.items, p.pipeline())
		ao.raws = append(ao.raws, p.text(start))
	}
	return ao
}

func (p *parser) pipeline() node {
	neg := false
	for keyword(p.peek()) == "!" || keyword(p.peek()) == "time" {
		neg = neg != (keyword(p.advance()) == "!")
	}
	first := p.command()
	if !isOp(p.peek(), "|", "|&") && !neg {
		return first
	}
	pn := &pipeNode{cmds: []node{first}, neg: neg}
	for isOp(p.peek(), "|", "|&") {
		p.advance()
		p.skipNewlines()
		pn.cmds = append(pn.cmds, p.command())
	}
	return pn
}

func (p *parser) command() node {
	p.depth++
	defer func() { p.depth-- }()
	t := p.peek()
	if p.depth > maxNesting {
		p.problemAt(t, "commands nested too deeply: the rest of the file is skipped")
		p.gaveUp = true
		p.lx.pos = len(p.lx.src)
		p.ahead = p.ahead[:0]
		return nil
	}
	var n node
	switch {
	case t.kind == tArith:
		p.advance()
		n = &arithNode{expr: t.text, line: t.line}
	case isOp(t, "("):
		p.advance()
		body := p.list(nil)
		p.expectOp(")", t, "subshell")
		n = &groupNode{body: body}
	default:
		switch keyword(t) {
		case "if":
			n = p.ifCmd()
		case "case":
			n = p.caseCmd()
		case "for", "select":
			n = p.forCmd()
		case "while", "until":
			n = p.whileCmd()
		case "{":
			p.advance()
			body := p.list(map[string]bool{"}": true})
			p.expectWord("}", t, "{")
			n = &groupNode{body: body}
		case "function":
			p.advance()
			name := p.advance()
			if isOp(p.peek(), "(") && isOp(p.peek2(), ")") {
				p.advance()
				p.advance()
			}
			p.skipNewlines()
			nm, _ := name.word.lit()
			return &funcNode{name: nm, body: p.command(), line: t.line}
		default:
			if nm, ok := t.word.lit(); ok && t.kind == tWord && isName(nm) && isOp(p.peek2(), "(") {
				p.advance()
				p.advance()
				if !isOp(p.peek(), ")") {
					p.problemAt(t, "function "+nm+": expected ) after (")
				} else {
					p.advance()
				}
				p.skipNewlines()
				return &funcNode{name: nm, body: p.command(), line: t.line}
			}
			return p.simple()
		}
	}
	p.redirections()
	return n
}

// redirections skips redirections after a compound command (done < file).
func (p *parser) redirections() {
	for p.peek().kind == tRedir {
		p.advance()
		p.redirTarget()
	}
}

func (p *parser) redirTarget() {
	switch t := p.peek(); {
	case t.kind == tWord:
		p.advance()
	case isOp(t, "("): // process substitution <(cmd)
		p.advance()
		p.list(nil)
		p.expectOp(")", t, "process substitution")
	}
}

func (p *parser) simple() node {
	first := p.peek()
	cmd := &simpleCmd{line: first.line}
	dbracket := false
	for {
		t := p.peek()
		switch {
		case t.kind == tWord:
			p.advance()
			if len(cmd.words) == 0 && isAssignWord(t.word) {
				cmd.assigns = append(cmd.assigns, t.word)
				continue
			}
			if s, _ := t.word.lit(); len(cmd.words) == 0 && s == "[[" {
				dbracket = true
			} else if s == "]]" {
				dbracket = false
			}
			cmd.words = append(cmd.words, t.word)
		case t.kind == tArray:
			p.advance()
			cmd.arrays = append(cmd.arrays, t.arr)
		case t.kind == tRedir:
			p.advance()
			p.redirTarget()
		case dbracket && isOp(t, "&&", "||"):
			p.advance()
			cmd.words = append(cmd.words, &word{parts: []part{{kind: pLit, text: t.text}}, raw: t.text, line: t.line, off: t.off})
		default:
			cmd.raw = p.text(first.off)
			return cmd
		}
	}
}

func (p *parser) expectWord(kw string, open token, what string) bool {
	if keyword(p.peek()) == kw {
		p.advance()
		return true
	}
	p.problemAt(open, what+": expected "+kw+" before "+describe(p.peek()))
	return false
}

func (p *parser) expectOp(op string, open token, what string) bool {
	if isOp(p.peek(), op) {
		p.advance()
		return true
	}
	p.problemAt(open, what+": expected "+op+" before "+describe(p.peek()))
	return false
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "the end of the file"
	case tNewline:
		return "the end of line " + itoa(t.line)
	case tWord:
		return "'" + t.word.raw + "' on line " + itoa(t.line)
	}
	return "'" + t.text + "' on line " + itoa(t.line)
}

func (p *parser) ifCmd() node {
	open := p.advance()
	n := &ifNode{line: open.line}
	kw := "if"
	for {
		start := p.peek().off
		cond := p.list(map[string]bool{"then": true})
		text := p.text(start)
		if !p.expectWord("then", open, kw) {
			n.clauses = append(n.clauses, ifClause{kw: kw, cond: cond, text: text})
			return n
		}
		body := p.list(map[string]bool{"elif": true, "else": true, "fi": true})
		n.clauses = append(n.clauses, ifClause{kw: kw, cond: cond, text: text, body: body})
		switch keyword(p.peek()) {
		case "elif":
			p.advance()
			kw = "elif"
			continue
		case "else":
			p.advance()
			n.els = p.list(map[string]bool{"fi": true})
			n.hasElse = true
		}
		p.expectWord("fi", open, "if")
		return n
	}
}

func (p *parser) caseCmd() node {
	open := p.advance()
	n := &caseNode{line: open.line}
	if t := p.peek(); t.kind == tWord {
		n.w = p.advance().word
	}
	n.head = p.text(open.off)
	p.skipNewlines()
	if !p.expectWord("in", open, "case") {
		return n
	}
	for {
		p.skipNewlines()
		t := p.peek()
		if keyword(t) == "esac" {
			p.advance()
			return n
		}
		if t.kind == tEOF {
			p.problemAt(open, "case: expected esac before the end of the file")
			return n
		}
		before := p.n
		if isOp(t, "(") {
			p.advance()
		}
		start := p.peek().off
		var item caseItem
		for p.peek().kind == tWord {
			item.pats = append(item.pats, p.advance().word)
			if !isOp(p.peek(), "|") {
				break
			}
			p.advance()
		}
		item.text = p.text(start)
		if !p.expectOp(")", t, "case pattern") {
			if p.n == before {
				p.advance()
			}
			continue
		}
		item.body = p.list(map[string]bool{"esac": true})
		if isOp(p.peek(), ";;", ";&", ";;&") {
			p.advance()
		}
		n.items = append(n.items, item)
	}
}

func (p *parser) forCmd() node {
	open := p.advance()
	n := &loopNode{line: open.line}
	if t := p.peek(); t.kind == tArith {
		p.advance()
		for _, f := range strings.FieldsFunc(t.text, func(r rune) bool { return !isNameChar(byte(r)) || r > 127 }) {
			if isName(f) {
				n.vars = append(n.vars, f)
			}
		}
	} else if t.kind == tWord {
		p.advance()
		if s, ok := t.word.lit(); ok {
			n.vars = append(n.vars, s)
		}
		p.skipNewlines()
		if keyword(p.peek()) == "in" {
			p.advance()
			for p.peek().kind == tWord {
				p.advance()
			}
		}
	}
	for t := p.peek(); t.kind == tNewline || isOp(t, ";"); t = p.peek() {
		p.advance()
	}
	n.header = p.text(open.off)
	if !p.expectWord("do", open, open.word.raw) {
		return n
	}
	n.body = p.list(map[string]bool{"done": true})
	p.expectWord("done", open, open.word.raw)
	return n
}

func (p *parser) whileCmd() node {
	open := p.advance()
	n := &loopNode{line: open.line}
	p.list(map[string]bool{"do": true})
	n.header = p.text(open.off)
	if !p.expectWord("do", open, open.word.raw) {
		return n
	}
	n.body = p.list(map[string]bool{"done": true})
	p.expectWord("done", open, open.word.raw)
	return n
}

// isAssignWord reports whether w is NAME=value, NAME+=value or NAME[i]=value.
func isAssignWord(w *word) bool {
	_, _, _, ok := splitAssign(w)
	return ok
}

// splitAssign splits NAME=value into the name, whether it appends, and the
// value as a word of its own.
func splitAssign(w *word) (name string, app bool, value *word, ok bool) {
	if len(w.parts) == 0 || w.parts[0].kind != pLit {
		return "", false, nil, false
	}
	s := w.parts[0].text
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return "", false, nil, false
	}
	name = s[:eq]
	if strings.HasSuffix(name, "+") {
		app = true
		name = name[:len(name)-1]
	}
	if i := strings.IndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") {
		name = name[:i] // an element assignment sets the array
	}
	if !isName(name) {
		return "", false, nil, false
	}
	value = &word{line: w.line, off: w.off}
	if rest := s[eq+1:]; rest != "" {
		value.parts = append(value.parts, part{kind: pLit, text: rest})
	}
	value.parts = append(value.parts, w.parts[1:]...)
	if i := strings.IndexByte(w.raw, '='); i >= 0 {
		value.raw = w.raw[i+1:]
	}
	return name, app, value, true
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
