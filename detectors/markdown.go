package detectors

import (
	"encoding/json"

	"fmt"
	"github.com/trainscope/trainscope/gpu"
	"io"
	"math"
	"strconv"
	"strings"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// WriteMarkdown writes the report as markdown: Summary, Metrics, Findings,
// Recommendations.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# trainscope report\n\n")
	b.WriteString("## Summary\n\n")
	for _, run := range r.Runs {
		fmt.Fprintf(&b, "Run `%s`: %d rank(s) %s", run.RunID, len(run.Ranks), rankList(run.Ranks))
		if run.WorldSize > 0 {
			fmt.Fprintf(&b, " of world size %d", run.WorldSize)
		}
		if len(run.GPUs) > 0 {
			fmt.Fprintf(&b, ", %s", strings.Join(run.GPUs, ", "))
		}
		fmt.Fprintf(&b, "; steps analysed: %s; %d events from %d file(s).\n\n", run.Steps, run.Events, run.Sources)
		for _, key := range run.GPUSpecs {
			if s, ok := gpu.Lookup(key); ok {
				fmt.Fprintf(&b, "GPU %s: %s dense BF16 %s TFLOP/s (FP8 %s), %s GiB at %s GB/s, GPU links %s GB/s.\n\n",
					s.Key, s.Name, formatFloat(s.BF16), formatFloat(s.FP8), formatFloat(s.MemGiB), formatFloat(s.HBMGBs), formatFloat(s.LinkGBs))
			}
		}
		for _, s := range r.Summary {
			if s.RunID == run.RunID {
				fmt.Fprintf(&b, "- %s\n", s.Text)
			}
		}
		b.WriteString("\n")
	}

	b.WriteString("## Metrics\n\n")
	var empty []string
	for _, t := range r.Metrics {
		if len(t.Rows) == 0 {
			// nothing to measure (no snapshot, no collectives...): listed below
			empty = append(empty, t.Detector)
			continue
		}
		fmt.Fprintf(&b, "### %s\n\n%s.\n\n", t.Detector, t.Description)
		writeTable(&b, t.Columns, t.Rows)
		b.WriteString("\n")
	}

	if len(empty) > 0 {
		fmt.Fprintf(&b, "No data for: %s.\n\n", strings.Join(empty, ", "))
	}

	b.WriteString("## Findings\n\n")
	n := 0
	for _, sec := range Sections {
		var in []Finding
		for _, f := range r.Findings {
			if f.Category != "summary" && SectionOf(f) == sec {
				in = append(in, f)
			}
		}
		if len(in) == 0 {
			continue
		}
		fmt.Fprintf(&b, "### %s\n\n", sec)
		for _, f := range in {
			n++
			writeFinding(&b, f)
		}
	}
	if n == 0 {
		b.WriteString("No finding crossed its threshold.\n\n")
	}

	b.WriteString("## Recommendations\n\n")
	if len(r.Recommendations) == 0 {
		b.WriteString("None: no finding calls for a change.\n")
	}
	for i, rec := range r.Recommendations {
		kind := ""
		if rec.Hypothesis {
			kind = " (hypothesis)"
		}
		fmt.Fprintf(&b, "%d. [%s]%s %s\n   - because: %s\n", i+1, rec.Severity, kind, rec.Fix, strings.Join(rec.Because, ", "))
		for _, x := range rec.Impact {
			fmt.Fprintf(&b, "   - expected impact: %s\n", x)
		}
		for _, x := range rec.Validation {
			fmt.Fprintf(&b, "   - validate: %s\n", x)
		}
		for _, x := range rec.Needs {
			fmt.Fprintf(&b, "   - to confirm: %s\n", x)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func rankList(ranks []int) string {
	if len(ranks) == 0 {
		return ""
	}
	parts := make([]string, len(ranks))
	for i, r := range ranks {
		parts[i] = strconv.Itoa(r)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

const maxCell = 80

func writeTable(b *strings.Builder, cols []string, rows [][]any) {
	b.WriteString("|")
	for _, c := range cols {
		fmt.Fprintf(b, " %s |", c)
	}
	b.WriteString("\n|")
	for range cols {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, row := range rows {
		b.WriteString("|")
		for i, v := range row {
			fmt.Fprintf(b, " %s |", cell(cols[i], v))
		}
		b.WriteString("\n")
	}
}

// cell formats one value: durations (columns ending in _ns) in readable
// units, shares with two decimals, text escaped and shortened.
func cell(col string, v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		s := strings.ReplaceAll(x, "|", `\|`)
		if len([]rune(s)) > maxCell {
			s = string([]rune(s)[:maxCell-1]) + "…"
		}
		return "`" + strings.ReplaceAll(s, "`", "'") + "`"
	case int64:
		return cell(col, float64(x))
	case float64:
		switch {
		case strings.HasSuffix(col, "_ns"):
			return Duration(x)
		case strings.HasSuffix(col, "_bytes"):
			return Bytes(x)
		}
		return formatFloat(x)
	}
	return fmt.Sprint(v)
}

func formatFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

// Duration formats nanoseconds with a unit: ns, us, ms or s.
func Duration(ns float64) string {
	a := math.Abs(ns)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.3f s", ns/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3f ms", ns/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.1f us", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

// Bytes formats a byte count with a binary unit.
func Bytes(n float64) string {
	a := math.Abs(n)
	switch {
	case a >= 1<<30:
		return fmt.Sprintf("%.2f GiB", n/(1<<30))
	case a >= 1<<20:
		return fmt.Sprintf("%.1f MiB", n/(1<<20))
	case a >= 1<<10:
		return fmt.Sprintf("%.1f KiB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f B", n)
}

// writeFinding writes one finding: its heading, message, value against
// threshold, evidence, fix, impact, validation and what would confirm it.
func writeFinding(b *strings.Builder, f Finding) {
	scope := ""
	if f.Rank != nil {
		scope = fmt.Sprintf(" — rank %d", *f.Rank)
	}
	if f.Subject != "" {
		scope += " — " + f.Subject
	}
	fmt.Fprintf(b, "#### [%s] %s%s\n\n%s\n\n", strings.ToUpper(f.Severity), f.Detector, scope, f.Message)
	if f.Value != nil {
		fmt.Fprintf(b, "- %s: %s", f.Metric, formatFloat(*f.Value))
		if f.Threshold != nil {
			fmt.Fprintf(b, " (threshold %s)", formatFloat(*f.Threshold))
		}
		b.WriteString("\n")
	}
	if f.Evidence != nil {
		ev, _ := json.Marshal(f.Evidence)
		fmt.Fprintf(b, "- evidence: `%s`\n", ev)
	}
	if f.Fix != "" {
		label := "fix"
		if f.Confidence == "hypothesis" {
			label = "fix (hypothesis)"
		}
		fmt.Fprintf(b, "- %s: %s\n", label, f.Fix)
	}
	if f.Impact != "" {
		fmt.Fprintf(b, "- expected impact: %s\n", f.Impact)
	}
	if f.Validation != "" {
		fmt.Fprintf(b, "- validate: %s\n", f.Validation)
	}
	if f.Needs != "" {
		fmt.Fprintf(b, "- to confirm: %s\n", f.Needs)
	}
	b.WriteString("\n")
}
