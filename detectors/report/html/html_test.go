package html

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"
)

// TestHTMLPage covers each construct the report writers emit, and what
// names from traces and scripts may hold: markup in them stays text.
func TestHTMLPage(t *testing.T) {
	cases := []struct {
		name     string
		md       string
		want     []string
		wantNot  []string
		contents []string // lines of the table of contents
	}{
		{
			name: "headings, severity, contents",
			md:   "# trainscope report\n\n## Summary\n\n### GPU compute\n\n#### GPU compute\n\n##### [CRITICAL] gpu_idle — rank 0\n\n##### [WARN] x\n\n##### [INFO] y\n\n##### [NOTE] z\n",
			want: []string{`<h1 id="trainscope-report">trainscope report</h1>`, `<h2 id="summary">Summary</h2>`,
				`<h4 id="gpu-compute-2">GPU compute</h4>`,
				`<h5 id="critical-gpu-idle-rank-0" class="critical">[CRITICAL] gpu_idle — rank 0</h5>`,
				`<h5 id="warn-x" class="warn">`, `<h5 id="info-y" class="info">`, `<h5 id="note-z">`},
			contents: []string{`<li class="l2"><a href="#summary">Summary</a></li>`, `<li class="l3"><a href="#gpu-compute">GPU compute</a></li>`},
		},
		{
			name: "code and bold",
			md:   "Run `a<b>`: 2 rank(s).\n\n---\n\n**Context:** model=`a**b**`\n\n- evidence: `{\"x\":1}`\n",
			want: []string{"<p>Run <code>a&lt;b&gt;</code>: 2 rank(s).</p>", "<hr>",
				"<p><strong>Context:</strong> model=<code>a**b**</code></p>", "<li>evidence: <code>{&quot;x&quot;:1}</code></li>"},
		},
		{
			name: "table",
			md:   "| run_id | subject | 3 |\n| --- | --- | --- |\n| `r` | `a \\| b` | 1.76 ms |\n| 3 apples | -3 | 4 GiB |\n",
			want: []string{`<div class="table"><table>`, "<th>3</th>", "<td><code>r</code></td>", "<td><code>a | b</code></td>",
				`<td class="num">1.76 ms</td>`, `<td class="num">-3</td>`, `<td class="num">4 GiB</td>`, "<td>3 apples</td>", "</table></div>"},
			wantNot: []string{"| ---"},
		},
		{
			name: "numbered items with lines and bullets",
			md:   "1. **late rank** — costs 1 ms  \n   Rank 1 delays\n   - evidence: e\n   - fix: f\n2. [warn] another  \n   because: x\n",
			want: []string{"<ol>\n<li><strong>late rank</strong> — costs 1 ms<br>\nRank 1 delays\n<ul>\n<li>evidence: e</li>\n<li>fix: f</li>\n</ul>\n</li>",
				"<li>[warn] another<br>\nbecause: x</li>\n</ol>"},
		},
		{
			name: "a partial report's notice",
			md:   "> **Partial report**: ranks missing.\n",
			want: []string{"<blockquote>\n<p><strong>Partial report</strong>: ranks missing.</p>\n</blockquote>"},
		},
		{
			name: "kernel and frame names outside code spans",
			md: "- most: void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>\n" +
				"- stack: python <module> > train > <lambda>\n- source <scripts>/entrypoint/local.sh\n",
			want: []string{"void at::native::vectorized_elementwise_kernel&lt;4, at::native::FillFunctor&lt;float&gt;&gt;",
				"python &lt;module&gt; &gt; train &gt; &lt;lambda&gt;", "source &lt;scripts&gt;/entrypoint/local.sh"},
		},
		{
			name: "raw HTML stays text",
			md: "#### [WARN] x — <img src=x onerror=alert(1)>\n\n<script>alert(1)</script>\n\n<div onclick=\"x\">\nblock\n</div>\n\n" +
				"| a | b |\n| --- | --- |\n| <b>x</b> | `<i>` |\n\n- <s>y</s> <!-- c -->\n",
			want: []string{`class="warn">[WARN] x — &lt;img src=x onerror=alert(1)&gt;</h4>`, "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>",
				"&lt;div onclick=&quot;x&quot;&gt;", "<td>&lt;b&gt;x&lt;/b&gt;</td>", "<code>&lt;i&gt;</code>", "&lt;s&gt;y&lt;/s&gt; &lt;!-- c --&gt;"},
			wantNot: []string{"<img", "<script", "<div onclick", "<b>", "<s>", "<!-- c", "omitted"},
		},
		{
			name:    "links, images and autolinks stay text",
			md:      "[x](javascript:alert(1)) ![i](http://e/x.png) <http://e/> <a@b.c> [r]\n\n[r]: http://e/\n",
			want:    []string{"[x](javascript:alert(1)) ![i](http://e/x.png) &lt;http://e/&gt; &lt;a@b.c&gt; [r]", "[r]: http://e/"},
			wantNot: []string{"<a href=\"j", "<a href=\"h", "<a href=\"m", "<img"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page := Page(c.md)
			main := page[strings.Index(page, "<main>"):]
			for _, want := range c.want {
				if !strings.Contains(main, want) {
					t.Errorf("page lacks %q:\n%s", want, main)
				}
			}
			for _, not := range c.wantNot {
				if strings.Contains(page, not) {
					t.Errorf("page holds %q:\n%s", not, main)
				}
			}
			nav := page[strings.Index(page, "<nav>"):strings.Index(page, "</nav>")]
			for _, want := range c.contents {
				if !strings.Contains(nav, want) {
					t.Errorf("contents lack %q:\n%s", want, nav)
				}
			}
			if c.contents != nil && strings.Count(nav, "<li") != len(c.contents) {
				t.Errorf("contents list more than levels 2 and 3:\n%s", nav)
			}
		})
	}
}

// Heading ids are unique and stable: a repeat gets -2, -3, ..., an id the
// page uses itself is not given to a heading, and nor is one a repeat took.
func TestHeadingIDs(t *testing.T) {
	cases := []struct {
		reserved, texts, want []string
	}{
		{nil, []string{"GPU compute", "GPU compute", "gpu  compute!", "!!"}, []string{"gpu-compute", "gpu-compute-2", "gpu-compute-3", "s"}},
		{[]string{"charts"}, []string{"Charts", "Verdict"}, []string{"charts-2", "verdict"}},
		{nil, []string{"x", "x", "x 2", "x"}, []string{"x", "x-2", "x-2-2", "x-3"}},
		{nil, []string{"[WARN] gpu_idle — rank 0", "`hand` 🚀 run"}, []string{"warn-gpu-idle-rank-0", "hand-run"}},
	}
	for _, c := range cases {
		ids := &headingIDs{seen: map[string]int{}}
		for _, r := range c.reserved {
			ids.Put([]byte(r))
		}
		for i, text := range c.texts {
			if got := string(ids.Generate([]byte(text), 0)); got != c.want[i] {
				t.Errorf("%v then %q: id %q, want %q", c.texts[:i], text, got, c.want[i])
			}
		}
	}
}

// allowedTags are the only elements a page may hold, with their
// attributes: the shell's, goldmark's for the markdown constructs, the
// charts'. Anything else came from the input.
var allowedTags = map[string][]string{
	"html": {"lang"}, "head": nil, "meta": {"charset", "name", "content"}, "title": nil, "style": nil, "body": nil,
	"nav": nil, "main": nil, "ul": {"class"}, "ol": {"start"}, "li": {"class"}, "a": {"href"}, "strong": nil, "em": nil,
	"h1": {"id", "class"}, "h2": {"id", "class"}, "h3": {"id", "class"}, "h4": {"id", "class"}, "h5": {"id", "class"}, "h6": {"id", "class"},
	"p": nil, "code": {"class"}, "pre": nil, "br": nil, "hr": nil, "blockquote": nil, "div": {"class"},
	"table": nil, "thead": nil, "tbody": nil, "tr": nil, "th": {"style"}, "td": {"class", "style"},
}

// ourClass are the classes the page sets: the contents' levels, the
// findings' severities, numbers in tables, the tables' scrolling box, and
// a fenced code block's language (goldmark's, from the text: escaped; it
// may hold a line break, as the tokenizer turns a \r into \n: (?s)).
var ourClass = regexp.MustCompile(`(?s)^(l2|l3|critical|warn|info|num|table|language-.*)$`)

// FuzzHTMLPage: report text carries names from the traces (kernels,
// stack frames, process groups) and scripts; whatever it holds, the page
// has no element or attribute but the renderer's own, and its links stay
// on the page.
func FuzzHTMLPage(f *testing.F) {
	f.Add("#### [WARN] x — <img src=x onerror=alert(1)>\n| a | b |\n| --- | --- |\n| `<script>` | **<b>** |\n1. <i>\n   - <s>\n---\n")
	f.Add("- `unterminated <x>\n| \\| <y> |")
	f.Add("[a](javascript:x) <javascript:alert(1)> ![i](x.png)\n\n[r]: /x\n```js\n<b>\n```\n    <pre>\n> <q>\n")
	f.Add("| :-- | --: |\n| --- | --- |\n| <td onclick=x> | &lt;script&gt; &#60;img&#62; |\n")
	f.Fuzz(func(t *testing.T, md string) {
		page := Page(md)
		z := xhtml.NewTokenizer(strings.NewReader(page))
		for {
			tt := z.Next()
			if tt == xhtml.ErrorToken {
				break
			}
			if tt != xhtml.StartTagToken && tt != xhtml.SelfClosingTagToken {
				continue
			}
			tok := z.Token()
			attrs, ok := allowedTags[tok.Data]
			if !ok {
				t.Fatalf("element <%s> from the text:\n%q\n->\n%s", tok.Data, md, page)
			}
			for _, a := range tok.Attr {
				if !slices.Contains(attrs, a.Key) || a.Key == "href" && !strings.HasPrefix(a.Val, "#") ||
					a.Key == "style" && !strings.HasPrefix(a.Val, "text-align:") || a.Key == "class" && !ourClass.MatchString(a.Val) {
					t.Fatalf("attribute %s=%q on <%s> from the text:\n%q\n->\n%s", a.Key, a.Val, tok.Data, md, page)
				}
			}
		}
		if !strings.HasSuffix(page, "</main>\n</body>\n</html>\n") {
			t.Fatalf("page does not end as the shell does:\n%q\n->\n%s", md, page)
		}
	})
}
