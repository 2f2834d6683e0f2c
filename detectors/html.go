package detectors

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"regexp"
	"strings"
)

// WriteHTML writes the report as one self-contained HTML page: the
// markdown report's sections, tables and findings, styled, with a table of
// contents and each finding coloured by severity. It renders the markdown
// report, so the two always say the same.
//
// After the verdict come charts drawn as inline SVG: each rank's GPU time
// split into compute, transfer, wait and idle, a timeline of one step with
// the late arrivals marked, and the top kernels.
func (r *Report) WriteHTML(w io.Writer) error {
	var md strings.Builder
	if err := r.WriteMarkdownFull(&md); err != nil {
		return err
	}
	_, err := io.WriteString(w, htmlPage(md.String(), r.chartsHTML()))
	return err
}

// WriteHTMLOf writes as an HTML page (HTMLPage) the markdown that
// writeMarkdown produces: how the audit and diff reports become pages too.
func WriteHTMLOf(w io.Writer, writeMarkdown func(io.Writer) error) error {
	var md bytes.Buffer
	if err := writeMarkdown(&md); err != nil {
		return err
	}
	_, err := io.WriteString(w, HTMLPage(md.String()))
	return err
}

// HTMLPage renders a markdown report (WriteMarkdown's output) as the HTML
// page WriteHTML writes; serve uses it on the reports it keeps.
func HTMLPage(md string) string { return htmlPage(md, "") }

// htmlPage renders md with charts (HTML) as a section of their own after
// the first one (the verdict).
func htmlPage(md, charts string) string {
	var b strings.Builder
	b.WriteString(htmlHead)
	body, toc := markdownToHTML(md)
	if charts != "" {
		charts = "<h2 id=\"charts\">Charts</h2>\n" + charts
		if i := nthIndex(body, "<h2 ", 2); i >= 0 {
			body = body[:i] + charts + body[i:]
		} else {
			body += charts
		}
		entry := "<li class=\"l2\"><a href=\"#charts\">Charts</a></li>\n"
		if i := nthIndex(toc, "<li class=\"l2\"", 2); i >= 0 {
			toc = toc[:i] + entry + toc[i:]
		} else {
			toc += entry
		}
	}
	b.WriteString("<nav><strong>Contents</strong><ul>\n")
	b.WriteString(toc)
	b.WriteString("</ul></nav>\n<main>\n")
	b.WriteString(body)
	b.WriteString("</main>\n</body>\n</html>\n")
	return b.String()
}

// nthIndex is the index of the nth (from 1) occurrence of sub in s, or -1.
func nthIndex(s, sub string, n int) int {
	at := 0
	for ; n > 0; n-- {
		i := strings.Index(s[at:], sub)
		if i < 0 {
			return -1
		}
		if n == 1 {
			return at + i
		}
		at += i + len(sub)
	}
	return -1
}

const htmlHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>trainscope report</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; display: flex; color: #1d2330; }
nav { position: sticky; top: 0; align-self: flex-start; max-height: 100vh; overflow-y: auto; width: 15rem; flex: none; padding: 1rem; background: #f4f5f7; box-sizing: border-box; }
nav ul { list-style: none; padding-left: 0.8rem; margin: 0.3rem 0; }
nav a { color: #2c4a80; text-decoration: none; }
nav li.l3 { padding-left: 0.8rem; font-size: 13px; }
main { padding: 1rem 2rem; min-width: 0; flex: 1; }
h1 { margin-top: 0; }
h2 { border-bottom: 2px solid #d0d4dc; padding-bottom: 0.2rem; margin-top: 2rem; }
h3 { margin-top: 1.6rem; color: #2c4a80; }
h4 { margin: 1.2rem 0 0.4rem; }
h5 { margin: 1rem 0 0.3rem; font-size: 14px; }
h4.critical, h5.critical { border-left: 5px solid #c62828; padding-left: 0.5rem; }
h4.warn, h5.warn { border-left: 5px solid #ef8f00; padding-left: 0.5rem; }
h4.info, h5.info { border-left: 5px solid #1e88e5; padding-left: 0.5rem; }
.table { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.4rem 0 0.8rem; font-size: 13px; }
th, td { border: 1px solid #d0d4dc; padding: 0.2rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #eef0f4; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f1f2f5; padding: 0 0.2rem; border-radius: 3px; }
li { margin: 0.15rem 0; }
figure.chart { margin: 0.8rem 0 1.6rem; max-width: 64rem; }
figure.chart figcaption { font-weight: 600; margin-bottom: 0.3rem; }
figure.chart svg { display: block; }
figure.chart text { font: 11px system-ui, sans-serif; fill: #1d2330; }
figure.chart text.val { fill: #555; }
.legend { font-size: 12px; margin-bottom: 0.3rem; }
.legend span { margin-right: 1rem; white-space: nowrap; }
.legend i { display: inline-block; width: 0.8rem; height: 0.8rem; margin-right: 0.3rem; vertical-align: -0.1rem; }
</style>
</head>
<body>
`

var (
	mdHeader   = regexp.MustCompile(`^(#{1,5}) (.*)$`)
	mdSeverity = regexp.MustCompile(`^\[(CRITICAL|WARN|INFO)\]`)
	mdNumbered = regexp.MustCompile(`^(\d+)\. (.*)$`)
	mdNumber   = regexp.MustCompile(`^-?[0-9][0-9.,]*( ?(ns|us|µs|ms|s|B|KiB|MiB|GiB|TiB|%))?$`)
)

// markdownToHTML converts the markdown the report writers emit (headers,
// one-line paragraphs, pipe tables, "- " bullets, numbered items with
// indented bullets, "---" rules, `code` and **bold** spans) and returns the body and a table of
// contents of its level-2 and level-3 headers.
func markdownToHTML(md string) (body, toc string) {
	var b, t strings.Builder
	lines := strings.Split(md, "\n")
	anchors := map[string]int{}
	inList, inOrdered, inSub := false, false, false
	closeLists := func() {
		if inSub {
			b.WriteString("</ul>")
			inSub = false
		}
		if inOrdered {
			b.WriteString("</li>\n</ol>\n")
			inOrdered = false
		}
		if inList {
			b.WriteString("</ul>\n")
			inList = false
		}
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.TrimSpace(line) == "":
			if !inOrdered { // a numbered item's bullets follow it without a blank line
				closeLists()
			}
		case line == "---":
			closeLists()
			b.WriteString("<hr>\n")
		case mdHeader.MatchString(line):
			closeLists()
			m := mdHeader.FindStringSubmatch(line)
			level, text := len(m[1]), m[2]
			id := anchor(text, anchors)
			class := ""
			if s := mdSeverity.FindStringSubmatch(text); s != nil {
				class = fmt.Sprintf(` class="%s"`, strings.ToLower(s[1]))
			}
			fmt.Fprintf(&b, "<h%d id=\"%s\"%s>%s</h%d>\n", level, id, class, inline(text), level)
			if level == 2 || level == 3 {
				fmt.Fprintf(&t, "<li class=\"l%d\"><a href=\"#%s\">%s</a></li>\n", level, id, html.EscapeString(strings.ReplaceAll(text, "`", "")))
			}
		case strings.HasPrefix(line, "|"):
			closeLists()
			var rows []string
			for ; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
				rows = append(rows, lines[i])
			}
			i--
			writeHTMLTable(&b, rows)
		case inOrdered && strings.HasPrefix(line, "   ") && !strings.HasPrefix(line, "   - "):
			// a numbered item's continuation line (after a "  " break)
			if inSub {
				b.WriteString("</ul>")
				inSub = false
			}
			b.WriteString("<br>" + inline(strings.TrimSpace(line)))
		case strings.HasPrefix(line, "   - ") && inOrdered:
			if !inSub {
				b.WriteString("<ul>")
				inSub = true
			}
			fmt.Fprintf(&b, "<li>%s</li>", inline(strings.TrimPrefix(line, "   - ")))
		case strings.HasPrefix(line, "- "):
			if inOrdered {
				closeLists()
			}
			if !inList {
				b.WriteString("<ul>\n")
				inList = true
			}
			fmt.Fprintf(&b, "<li>%s</li>\n", inline(strings.TrimPrefix(line, "- ")))
		case mdNumbered.MatchString(line):
			m := mdNumbered.FindStringSubmatch(line)
			if inSub {
				b.WriteString("</ul>")
				inSub = false
			}
			if !inOrdered {
				closeLists()
				fmt.Fprintf(&b, "<ol start=\"%s\">\n<li>", m[1])
				inOrdered = true
			} else {
				b.WriteString("</li>\n<li>")
			}
			b.WriteString(inline(m[2]))
		default:
			closeLists()
			fmt.Fprintf(&b, "<p>%s</p>\n", inline(line))
		}
	}
	closeLists()
	return b.String(), t.String()
}

// writeHTMLTable writes a pipe table (header, separator, rows); cells
// that hold a number or a duration are right-aligned.
func writeHTMLTable(b *strings.Builder, rows []string) {
	b.WriteString("<div class=\"table\"><table>\n")
	for n, row := range rows {
		if n == 1 && strings.Contains(row, "---") {
			continue
		}
		tag := "td"
		if n == 0 {
			tag = "th"
		}
		b.WriteString("<tr>")
		for _, c := range splitRow(row) {
			class := ""
			if tag == "td" && mdNumber.MatchString(c) {
				class = ` class="num"`
			}
			fmt.Fprintf(b, "<%s%s>%s</%s>", tag, class, inline(c), tag)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table></div>\n")
}

// splitRow splits "| a | b \| c |" into its cells, keeping escaped pipes.
func splitRow(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(strings.TrimSuffix(row, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteByte('|')
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// inline escapes text and turns `code` spans into <code> and **bold**
// (which may hold code spans) into <strong>.
func inline(s string) string {
	parts := strings.Split(s, "`")
	var b strings.Builder
	bold := false
	for i, p := range parts {
		if i%2 == 1 && i < len(parts)-1 {
			b.WriteString("<code>" + html.EscapeString(p) + "</code>")
			continue
		}
		if i%2 == 1 { // an unmatched backtick
			b.WriteString("`")
		}
		for {
			j := strings.Index(p, "**")
			if j < 0 {
				break
			}
			b.WriteString(html.EscapeString(p[:j]))
			if bold {
				b.WriteString("</strong>")
			} else {
				b.WriteString("<strong>")
			}
			bold = !bold
			p = p[j+2:]
		}
		b.WriteString(html.EscapeString(p))
	}
	if bold {
		b.WriteString("</strong>")
	}
	return b.String()
}

// anchor is a unique id for a header.
func anchor(text string, seen map[string]int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
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
	seen[id]++
	if n := seen[id]; n > 1 {
		id = fmt.Sprintf("%s-%d", id, n)
	}
	return id
}
