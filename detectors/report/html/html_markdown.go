package html

import (
	"bytes"
	"fmt"
	"html/template"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// reportMarkdown converts the markdown the report writers emit: CommonMark
// with GFM tables and an id on every heading.
//
// Report text carries names from the traces (kernels such as
// "void at::native::vectorized_elementwise_kernel<4, ...>", stack frames
// such as "<module>", process groups) and from scripts. So there is no raw
// HTML, no link, image or autolink, and no link reference definition: their
// syntax in such a name stays text, escaped on output, instead of becoming
// markup (or, with goldmark's default, vanishing as "raw HTML omitted").
// The report writers use none of them.
var reportMarkdown = goldmark.New(
	goldmark.WithParser(parser.NewParser(
		parser.WithBlockParsers( // parser.DefaultBlockParsers less the HTML block
			util.Prioritized(parser.NewSetextHeadingParser(), 100),
			util.Prioritized(parser.NewThematicBreakParser(), 200),
			util.Prioritized(parser.NewListParser(), 300),
			util.Prioritized(parser.NewListItemParser(), 400),
			util.Prioritized(parser.NewCodeBlockParser(), 500),
			util.Prioritized(parser.NewATXHeadingParser(), 600),
			util.Prioritized(parser.NewFencedCodeBlockParser(), 700),
			util.Prioritized(parser.NewBlockquoteParser(), 800),
			util.Prioritized(parser.NewParagraphParser(), 1000)),
		parser.WithInlineParsers( // parser.DefaultInlineParsers less links, autolinks, raw HTML
			util.Prioritized(parser.NewCodeSpanParser(), 100),
			util.Prioritized(parser.NewEmphasisParser(), 500)),
		parser.WithAutoHeadingID(),
		parser.WithASTTransformers(util.Prioritized(markClasses{}, 1000)),
	)),
	goldmark.WithExtensions(extension.Table),
	// ahead of the table extension's renderer (500) for the table itself
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(scrollingTables{}, 100))),
)

// converted is a markdown report as HTML, cut before its second level-2
// heading (after the verdict), with each part's table of contents.
type converted struct {
	head, rest       template.HTML
	headToc, restToc []tocEntry
}

// convertMarkdown converts md; reserved are ids the page uses besides the
// headings' (no heading gets one of them).
func convertMarkdown(md []byte, reserved []string) converted {
	ids := &headingIDs{seen: map[string]int{}}
	for _, id := range reserved {
		ids.Put([]byte(id))
	}
	doc := reportMarkdown.Parser().Parse(text.NewReader(md), parser.WithContext(parser.NewContext(parser.WithIDs(ids))))

	// move the second level-2 heading and what follows to a document of
	// its own
	rest := ast.NewDocument()
	h2 := 0
	for n := doc.FirstChild(); n != nil; {
		next := n.NextSibling()
		if h, ok := n.(*ast.Heading); ok && h.Level == 2 {
			h2++
		}
		if h2 >= 2 {
			doc.RemoveChild(doc, n)
			rest.AppendChild(rest, n)
		}
		n = next
	}
	var c converted
	var head, tail bytes.Buffer
	for _, part := range []struct {
		doc ast.Node
		out *bytes.Buffer
		toc *[]tocEntry
	}{{doc, &head, &c.headToc}, {rest, &tail, &c.restToc}} {
		if err := reportMarkdown.Renderer().Render(part.out, md, part.doc); err != nil {
			// goldmark's renderer fails only when its writer does
			panic(err)
		}
		*part.toc = contents(part.doc, md)
	}
	// goldmark escapes all text it writes, and it writes no HTML of the
	// input's (see reportMarkdown)
	c.head, c.rest = template.HTML(head.String()), template.HTML(tail.String())
	return c
}

// contents lists the level-2 and level-3 headings under n.
func contents(n ast.Node, src []byte) []tocEntry {
	var out []tocEntry
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		h, ok := c.(*ast.Heading)
		if !ok || h.Level < 2 || h.Level > 3 {
			continue
		}
		id, _ := h.AttributeString("id")
		idb, _ := id.([]byte)
		out = append(out, tocEntry{Level: h.Level, ID: string(idb), Text: plainText(h, src)})
	}
	return out
}

// plainText is the text of n's inline content, markup left out.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch t := n.(type) {
			case *ast.Text:
				b.Write(t.Segment.Value(src))
			case *ast.String:
				b.Write(t.Value)
			}
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

var (
	mdSeverity = regexp.MustCompile(`^\[(CRITICAL|WARN|INFO)\]`)
	mdNumber   = regexp.MustCompile(`^-?[0-9][0-9.,]*( ?(ns|us|µs|ms|s|B|KiB|MiB|GiB|TiB|%))?$`)
)

// markClasses sets the classes the page's style keys on: a heading that
// starts with a finding's severity ("##### [WARN] gpu_idle — rank 0")
// gets it as its class (critical, warn, info: the colour of its border),
// and a table cell that holds a number or a duration gets "num"
// (right-aligned).
type markClasses struct{}

func (markClasses) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	src := reader.Source()
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			if m := mdSeverity.FindSubmatch(n.Lines().Value(src)); m != nil {
				n.SetAttributeString("class", bytes.ToLower(m[1]))
			}
			return ast.WalkSkipChildren, nil
		case *east.TableCell:
			if _, header := n.Parent().(*east.TableHeader); !header && mdNumber.Match(n.Lines().Value(src)) {
				n.SetAttributeString("class", []byte("num"))
			}
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
}

// scrollingTables wraps each table in a div that scrolls sideways, so a
// wide metric table does not widen the page.
type scrollingTables struct{}

func (scrollingTables) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(east.KindTable, func(w util.BufWriter, _ []byte, _ ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			_, _ = w.WriteString("<div class=\"table\"><table>\n")
		} else {
			_, _ = w.WriteString("</table></div>\n")
		}
		return ast.WalkContinue, nil
	})
}

// headingIDs gives each heading an id from its text, as links into pages
// written before goldmark converted them expect: lower-case letters and
// digits, other runs as one "-" ("[WARN] gpu_idle — rank 0" is
// warn-gpu-idle-rank-0), "-2", "-3" on repeats.
type headingIDs struct{ seen map[string]int }

func (h *headingIDs) Generate(value []byte, _ ast.NodeKind) []byte {
	var b strings.Builder
	for _, r := range strings.ToLower(string(value)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	id := strings.TrimSuffix(b.String(), "-")
	if id == "" {
		id = "s"
	}
	if h.seen[id] > 0 {
		// the next free "-n" (a heading "x 2" may have taken x-2)
		base := id
		for n := h.seen[base] + 1; ; n++ {
			if id = fmt.Sprintf("%s-%d", base, n); h.seen[id] == 0 {
				h.seen[base] = n
				break
			}
		}
	}
	h.seen[id]++
	return []byte(id)
}

func (h *headingIDs) Put(value []byte) { h.seen[string(value)]++ }
