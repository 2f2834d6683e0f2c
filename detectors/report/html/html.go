package html

import (
	"bytes"
	"embed"
	"html/template"
	"io"
	"strings"

	"github.com/trainscope/trainscope/detectors/report"
)

// Write writes the report as one self-contained HTML page: the
// markdown report's sections, tables and findings, styled, with a table of
// contents and each finding coloured by severity. It renders the markdown
// report, so the two always say the same.
//
// After the verdict come charts drawn as inline SVG: each rank's GPU time
// split into compute, transfer, wait and idle, a timeline of one step with
// the late arrivals marked, and the top kernels.
func Write(w io.Writer, r *report.Report) error {
	var md bytes.Buffer
	if err := r.WriteMarkdownFull(&md); err != nil {
		return err
	}
	return writePage(w, md.Bytes(), chartViews(r))
}

// WriteOf writes as an HTML page (Page) the markdown that
// writeMarkdown produces: how the audit and diff reports become pages too.
func WriteOf(w io.Writer, writeMarkdown func(io.Writer) error) error {
	var md bytes.Buffer
	if err := writeMarkdown(&md); err != nil {
		return err
	}
	return writePage(w, md.Bytes(), nil)
}

// Page renders a markdown report (WriteMarkdown's output) as the HTML
// page Write writes; serve uses it on the reports it keeps.
func Page(md string) string {
	var b strings.Builder
	if err := writePage(&b, []byte(md), nil); err != nil {
		// only a template bug fails here: the writer cannot, the
		// markdown converter takes any input
		panic(err)
	}
	return b.String()
}

//go:embed html_page.tmpl charts_svg.tmpl
var templateFiles embed.FS

// pageTemplates draw the page shell (html_page.tmpl) and the charts
// (charts_svg.tmpl). html/template escapes every value by where it lands:
// element text, attribute, CSS; only the converted markdown is passed as
// template.HTML.
var pageTemplates = template.Must(template.New("").Funcs(chartFuncs).ParseFS(templateFiles, "*.tmpl"))

// pageView is what html_page.tmpl draws: the markdown cut after its first
// section (the verdict) with the charts between the two parts.
type pageView struct {
	Contents   []tocEntry
	Head, Rest template.HTML
	Charts     []runChartsView
}

// tocEntry is one line of the table of contents.
type tocEntry struct {
	Level    int
	ID, Text string
}

// writePage writes md as a page, with charts (when there are any) as a
// section of their own after the first one.
func writePage(w io.Writer, md []byte, charts []runChartsView) error {
	var reserved []string
	if len(charts) > 0 {
		reserved = append(reserved, "charts")
	}
	doc := convertMarkdown(md, reserved)
	v := pageView{Head: doc.head, Rest: doc.rest, Charts: charts, Contents: doc.headToc}
	if len(charts) > 0 {
		v.Contents = append(v.Contents, tocEntry{Level: 2, ID: "charts", Text: "Charts"})
	}
	v.Contents = append(v.Contents, doc.restToc...)
	return pageTemplates.ExecuteTemplate(w, "page", v)
}
