package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/gpu"
)

// WriteMarkdown writes the report as one screen of markdown: the verdict
// (the root cause that costs the most step time, with its evidence), the
// root causes ranked by cost with the findings each explains, the other
// findings one line per detector, and the top recommendations. The metric
// tables and every finding in full are in WriteMarkdownFull, the JSON and
// the HTML report.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	r.writeBrief(&b)
	fmt.Fprintf(&b, "## Tables\n\n%d metric tables and every finding in full are in the JSON and HTML reports, and in markdown with --full.\n", len(r.Metrics))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdownFull writes the one-screen report followed by an appendix
// with every metric table and every finding in full.
func (r *Report) WriteMarkdownFull(w io.Writer) error {
	var b strings.Builder
	r.writeBrief(&b)
	b.WriteString("## Appendix\n\n")
	r.writeDetails(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// MaxRecommendations is how many recommendations the one-screen report
// lists (the JSON report keeps them all).
const MaxRecommendations = 5

func (r *Report) writeBrief(b *strings.Builder) {
	b.WriteString("# trainscope report\n\n")
	if st := r.Status; st != nil {
		if st.Partial {
			fmt.Fprintf(b, "> **Partial report**: %s. It will be replaced once the rest has arrived; alerts on this run wait until then.\n\n", strings.Join(st.Reasons, "; "))
		}
		if len(st.Missing) > 0 {
			fmt.Fprintf(b, "> **Incomplete data**: %s. The report covers the rest.\n\n", strings.Join(st.Missing, "; "))
		}
	}
	b.WriteString("## Verdict\n\n")
	for _, run := range r.Runs {
		r.writeVerdict(b, run)
	}
	if len(r.Failed) > 0 {
		b.WriteString("## Detectors that failed\n\n")
		fmt.Fprintf(b, "%d detector(s) failed; their results are missing from this report, and everything else in it is complete:\n\n", len(r.Failed))
		for _, f := range r.Failed {
			fmt.Fprintf(b, "- `%s` (%s): %s\n", f.Detector, f.Kind, strings.Join(strings.Fields(f.Error), " "))
		}
		b.WriteString("\n")
	}
	if len(r.Causes) > 0 {
		b.WriteString("## Root causes\n\n")
		for i, c := range r.Causes {
			r.writeCause(b, i+1, c)
		}
	}
	r.writeFindingLines(b)
	r.writeTopRecommendations(b)
}

func (r *Report) writeVerdict(b *strings.Builder, run RunInfo) {
	fmt.Fprintf(b, "Run `%s`: %d rank(s) %s", run.RunID, len(run.Ranks), rankList(run.Ranks))
	if run.WorldSize > 0 {
		fmt.Fprintf(b, " of world size %d", run.WorldSize)
	}
	if len(run.GPUs) > 0 {
		fmt.Fprintf(b, ", %s", strings.Join(run.GPUs, ", "))
	}
	fmt.Fprintf(b, "; steps analysed: %s; %d events from %d file(s).\n\n", run.Steps, run.Events, run.Sources)
	for _, key := range run.GPUSpecs {
		if s, ok := gpu.Lookup(key); ok {
			fmt.Fprintf(b, "GPU %s: %s.\n\n", s.Key, gpuLine(s, run.Dtypes))
		}
	}
	var lines []string
	for _, h := range r.Headline {
		if h.RunID == run.RunID {
			fmt.Fprintf(b, "**%s.**\n\n", h.Text)
			lines = h.Lines
		}
	}
	for _, line := range lines {
		fmt.Fprintf(b, "- %s\n", line)
	}
	b.WriteString("\n")
}

func (r *Report) writeCause(b *strings.Builder, n int, c Cause) {
	where := ""
	switch {
	case c.Rank != nil:
		where = fmt.Sprintf("rank %d", *c.Rank)
	case c.Host != "":
		where = "host " + c.Host
	case len(c.Ranks) > 0:
		where = "ranks " + mdfmt.RankRanges(slices.Sorted(slices.Values(c.Ranks)))
	}
	why := ""
	if c.Why != "" && (c.Kind == "late_rank" || c.Kind == "one_off_stall" || c.Kind == KindSlowHost) {
		why = ", " + strings.ReplaceAll(c.Why, "_", " ")
	}
	cost := fmt.Sprintf("costs %s a step (%.1f%%)", mdfmt.Duration(c.CostNS), c.CostPct)
	switch {
	case c.StallNS > 0 && c.Step != nil:
		cost = fmt.Sprintf("costs %s once, in step %d (%s a step over the window, %.1f%%)", mdfmt.Duration(c.StallNS), *c.Step, mdfmt.Duration(c.CostNS), c.CostPct)
	case c.Kind == KindHang:
		cost = "stops the run"
	}
	if where != "" {
		where = ": " + where
	}
	fmt.Fprintf(b, "%d. **%s%s%s** — %s  \n   %s\n", n, c.Title(), where, why, cost, mdfmt.UpperFirst(c.Headline))
	for _, e := range c.Evidence {
		fmt.Fprintf(b, "   - evidence: %s\n", e)
	}
	if len(c.Shown) > 0 {
		fmt.Fprintf(b, "   - shown by: %s\n", r.findingList(c.Shown))
	}
	if len(c.Explains) > 0 {
		fmt.Fprintf(b, "   - explains: %s\n", r.findingList(c.Explains))
	}
	if c.Fix != "" {
		fmt.Fprintf(b, "   - fix: %s\n", c.Fix)
	}
	b.WriteString("\n")
}

// findingList names findings compactly: each detector with its ranks.
func (r *Report) findingList(ids []string) string {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var order []string
	ranks := map[string][]int{}
	for _, f := range r.Findings {
		if !want[f.ID] {
			continue
		}
		if _, ok := ranks[f.Detector]; !ok {
			order = append(order, f.Detector)
			ranks[f.Detector] = nil
		}
		if f.Rank != nil {
			ranks[f.Detector] = append(ranks[f.Detector], int(*f.Rank))
		}
	}
	parts := make([]string, 0, len(order))
	for _, d := range order {
		parts = append(parts, withRanks(d, slices.Compact(slices.Sorted(slices.Values(ranks[d])))))
	}
	return strings.Join(parts, ", ")
}

// writeFindingLines lists the findings, one line per detector and
// severity, under PerfTracker's sections: the ranks, the spread of the
// value, the worst message, and which root cause explains them.
func (r *Report) writeFindingLines(b *strings.Builder) {
	b.WriteString("## Findings\n\n")
	n := 0
	for _, sec := range Sections {
		type key struct{ detector, severity string }
		groups := map[key][]Finding{}
		var order []key
		for _, f := range r.Findings {
			if f.Category == "summary" || r.SectionOf(f) != sec {
				continue
			}
			k := key{f.Detector, f.Severity}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], f)
		}
		if len(order) == 0 {
			continue
		}
		fmt.Fprintf(b, "### %s\n\n", sec)
		for _, k := range order {
			n++
			b.WriteString(findingLine(k.detector, k.severity, groups[k]) + "\n")
		}
		b.WriteString("\n")
	}
	if n == 0 {
		b.WriteString("No finding crossed its threshold.\n\n")
	}
}

func findingLine(detector, severity string, fs []Finding) string {
	var ranks []int
	var vals []float64
	causes := map[string][]int{} // cause -> the ranks whose finding it explains or shows
	for _, f := range fs {
		if f.Rank != nil {
			ranks = append(ranks, int(*f.Rank))
		}
		if f.Value != nil {
			vals = append(vals, *f.Value)
		}
		for _, c := range slices.Concat(f.CausedBy, f.Shows) {
			if f.Rank != nil {
				causes[c] = append(causes[c], int(*f.Rank))
			} else if _, ok := causes[c]; !ok {
				causes[c] = nil
			}
		}
	}
	sort.Ints(ranks)
	ranks = slices.Compact(ranks)
	sort.Float64s(vals)
	line := fmt.Sprintf("- [%s] %s", severity, detector)
	if subjects := distinctSubjects(fs); len(ranks) == 0 && len(subjects) > 0 && len(subjects) <= 3 {
		line += " (" + strings.Join(subjects, ", ") + ")"
	}
	switch {
	case len(ranks) == 1:
		line += fmt.Sprintf(" on rank %d", ranks[0])
	case len(ranks) > 1:
		line += " on ranks " + mdfmt.RankRanges(ranks)
	}
	if len(vals) > 1 && vals[0] != vals[len(vals)-1] {
		line += fmt.Sprintf(" (%s %s to %s)", fs[0].Metric, mdfmt.Float(vals[0]), mdfmt.Float(vals[len(vals)-1]))
	} else if len(vals) > 0 {
		line += fmt.Sprintf(" (%s %s)", fs[0].Metric, mdfmt.Float(vals[0]))
	}
	worst := fs[0]
	for _, f := range fs {
		if f.Value != nil && worst.Value != nil && *f.Value > *worst.Value {
			worst = f
		}
	}
	msg := worst.Message
	if len(msg) > 220 {
		msg = msg[:strings.LastIndex(msg[:220], " ")] + " …"
	}
	line += ": " + msg
	if len(causes) > 0 {
		// name the ranks a cause accounts for when it is not all of them
		var refs []string
		for _, id := range slices.Sorted(maps.Keys(causes)) {
			rs := slices.Compact(slices.Sorted(slices.Values(causes[id])))
			if len(rs) > 0 && len(rs) < len(ranks) {
				refs = append(refs, fmt.Sprintf("%s (%s)", id, rankWord(rs)))
			} else {
				refs = append(refs, id)
			}
		}
		line += " — see root cause " + strings.Join(refs, ", ")
	}
	return line
}

// withRanks names a detector with its ranks, sorted: "gpu_idle",
// "gpu_idle (rank 3)", "gpu_idle (ranks 0-2, 5)".
func withRanks(name string, rs []int) string {
	switch len(rs) {
	case 0:
		return name
	case 1:
		return fmt.Sprintf("%s (rank %d)", name, rs[0])
	}
	return fmt.Sprintf("%s (ranks %s)", name, mdfmt.RankRanges(rs))
}

func rankWord(rs []int) string {
	if len(rs) == 1 {
		return fmt.Sprintf("rank %d", rs[0])
	}
	return "ranks " + mdfmt.RankRanges(rs)
}

// distinctSubjects is the findings' subjects (an audit rule's id, a
// tensor, a link) in first-seen order.
func distinctSubjects(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Subject != "" && !slices.Contains(out, f.Subject) {
			out = append(out, f.Subject)
		}
	}
	return out
}

// writeTopRecommendations lists the fixes: the root causes' first, then
// the findings' that no root cause accounts for, at most
// MaxRecommendations (all in the JSON report).
func (r *Report) writeTopRecommendations(b *strings.Builder) {
	b.WriteString("## Recommendations\n\n")
	n := 0
	for _, c := range r.Causes {
		if c.Fix == "" || n == MaxRecommendations {
			continue
		}
		n++
		fmt.Fprintf(b, "%d. %s  \n   for root cause %s: %s\n", n, mdfmt.UpperFirst(c.Fix), c.ID, firstClause(c.Headline))
	}
	explained := map[string]bool{}
	for _, f := range r.Findings {
		if len(f.CausedBy) > 0 || len(f.Shows) > 0 {
			explained[f.Detector+"\x00"+f.Fix] = true
		}
	}
	for _, rec := range r.Recommendations {
		if n == MaxRecommendations {
			break
		}
		skip := false
		for _, f := range r.Findings {
			if f.Fix == rec.Fix && explained[f.Detector+"\x00"+f.Fix] {
				skip = true
				break
			}
		}
		if skip {
			continue
		}
		n++
		kind := ""
		if rec.Hypothesis {
			kind = " (hypothesis)"
		}
		fmt.Fprintf(b, "%d. [%s]%s %s  \n   because: %s\n", n, rec.Severity, kind, rec.Fix, compactBecause(rec.Because))
	}
	if n == 0 {
		b.WriteString("None: no finding calls for a change.\n")
	}
	if more := len(r.Recommendations) + len(r.Causes) - n; more > 0 {
		fmt.Fprintf(b, "\n%d more in the JSON report.\n", more)
	}
	b.WriteString("\n")
}

func firstClause(s string) string {
	if i := strings.Index(s, ": "); i > 0 {
		return s[:i]
	}
	return s
}
