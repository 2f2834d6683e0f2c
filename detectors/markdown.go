package detectors

import (
	"encoding/json"
	"regexp"
	"sort"

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

// writeDetails writes the report's appendix: every metric table (at most
// MaxTableRows rows each) and every finding in full, under PerfTracker's
// sections.
func (r *Report) writeDetails(b *strings.Builder) {
	b.WriteString("### Metrics\n\n")
	var empty []string
	for _, t := range r.Metrics {
		if len(t.Rows) == 0 {
			// nothing to measure (no snapshot, no collectives...): listed below
			empty = append(empty, t.Detector)
		}
	}
	// the metric tables under the same PerfTracker sections as the findings
	for _, sec := range Sections {
		header := false
		for _, t := range r.Metrics {
			if len(t.Rows) > 0 && SectionOf(Finding{Detector: t.Detector, Category: t.Category}) == sec {
				if !header {
					fmt.Fprintf(b, "#### %s\n\n", sec)
					header = true
				}
				writeMetricTable(b, t)
			}
		}
	}
	if len(empty) > 0 {
		fmt.Fprintf(b, "No data for: %s.\n\n", strings.Join(empty, ", "))
	}

	b.WriteString("### Findings in full\n\n")
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
		fmt.Fprintf(b, "#### %s\n\n", sec)
		// a detector firing on many ranks is one entry: how many, the
		// spread of its value, and its worst cases in full
		count := map[string]int{}
		for _, f := range in {
			count[f.Detector+"\x00"+f.Severity]++
		}
		grouped := map[string]bool{}
		for _, f := range in {
			key := f.Detector + "\x00" + f.Severity
			n++
			if count[key] <= GroupAbove {
				writeFinding(b, f)
				continue
			}
			if grouped[key] {
				continue
			}
			grouped[key] = true
			writeGroup(b, f.Detector, f.Severity, in)
		}
	}
	if n == 0 {
		b.WriteString("No finding crossed its threshold.\n\n")
	}

}

// writeMetricTable writes one detector's metric table, at most
// MaxTableRows rows of it.
func writeMetricTable(b *strings.Builder, t MetricTable) {
	fmt.Fprintf(b, "##### %s\n\n%s.\n\n", t.Detector, t.Description)
	rows := t.Rows
	if len(rows) > MaxTableRows {
		rows = rows[:MaxTableRows]
	}
	writeTable(b, t.Columns, rows)
	if len(t.Rows) > len(rows) {
		fmt.Fprintf(b, "\n%d more rows: `SELECT * FROM metrics WHERE detector = '%s'` (trainscope sql), or the JSON report.\n", len(t.Rows)-len(rows), t.Detector)
	}
	b.WriteString("\n")
}

// gpuLine states a GPU's peaks for the dtypes it has (a V100 has no BF16
// or FP8: printing "0 TFLOP/s" for them misleads), the job's own matmul
// dtypes first when the trace says them.
func gpuLine(s gpu.Spec, jobDtypes []string) string {
	peaks := []struct {
		name string
		v    float64
	}{{"bf16", s.BF16}, {"fp16", s.FP16}, {"fp8", s.FP8}, {"tf32", s.TF32}, {"fp32", s.FP32}}
	var have, missing []string
	for _, p := range peaks {
		if p.v > 0 {
			have = append(have, fmt.Sprintf("%s %s", strings.ToUpper(p.name), formatFloat(p.v)))
		} else {
			missing = append(missing, strings.ToUpper(p.name))
		}
	}
	line := s.Name + ", dense peak " + strings.Join(have, ", ") + " TFLOP/s"
	if len(missing) > 0 {
		line += " (no " + strings.Join(missing, " or ") + ")"
	}
	if len(jobDtypes) > 0 {
		line += "; the job's matmuls ran in " + strings.ToUpper(strings.Join(jobDtypes, ", "))
	}
	line += fmt.Sprintf("; %s GiB at %s GB/s", formatFloat(s.MemGiB), formatFloat(s.HBMGBs))
	if s.LinkGBs > 0 {
		line += fmt.Sprintf(", GPU links %s GB/s", formatFloat(s.LinkGBs))
	} else {
		line += ", no GPU links (PCIe)"
	}
	return line
}

func rankList(ranks []int) string {
	if len(ranks) == 0 {
		return ""
	}
	return "(" + RankRanges(ranks) + ")"
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

// shorten cuts text to maxCell characters. A call stack ("kind a > b >
// c") keeps its kind and its innermost frames, the ones that tell stacks
// apart; other text keeps its beginning.
func shorten(s string) string {
	r := []rune(s)
	if len(r) <= maxCell {
		return s
	}
	if kind, path, ok := strings.Cut(s, " "); ok && strings.Contains(path, " > ") && len([]rune(kind)) < maxCell/4 {
		// drop whole frames from the root end while it does not fit
		frames := strings.Split(strings.TrimPrefix(path, "… > "), " > ")
		for len(frames) > 1 {
			frames = frames[1:]
			out := kind + " … > " + strings.Join(frames, " > ")
			if len([]rune(out)) <= maxCell {
				return out
			}
		}
		// one frame too long by itself: keep its end
		head := []rune(kind + " …")
		return string(head) + string(r[len(r)-(maxCell-len(head)):])
	}
	return string(r[:maxCell-1]) + "…"
}

// cell formats one value: durations (columns ending in _ns) in readable
// units, shares with two decimals, text escaped and shortened.
func cell(col string, v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		s := strings.ReplaceAll(x, "|", `\|`)
		s = shorten(s)
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
	fmt.Fprintf(b, "##### [%s] %s%s\n\n%s\n\n", strings.ToUpper(f.Severity), f.Detector, scope, f.Message)
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

// GroupAbove is how many findings of one detector and severity a section
// lists one by one; more are summarised (a fleet of 1,024 ranks would
// otherwise list the same finding 1,024 times).
const GroupAbove = 8

// writeGroup summarises the findings of one detector and severity: how
// many, on which ranks, the range of their values, and the worst three
// written out (findings arrive worst first within a detector when its SQL
// orders them so; otherwise by value).
func writeGroup(b *strings.Builder, detector, severity string, all []Finding) {
	var fs []Finding
	for _, f := range all {
		if f.Detector == detector && f.Severity == severity {
			fs = append(fs, f)
		}
	}
	var ranks []int
	var vals []float64
	for _, f := range fs {
		if f.Rank != nil {
			ranks = append(ranks, int(*f.Rank))
		}
		if f.Value != nil {
			vals = append(vals, *f.Value)
		}
	}
	sort.Ints(ranks)
	sort.Float64s(vals)
	fmt.Fprintf(b, "##### [%s] %s — %d findings", strings.ToUpper(severity), detector, len(fs))
	if len(ranks) > 0 {
		fmt.Fprintf(b, " on %d ranks (%s)", len(ranks), RankRanges(ranks))
	}
	b.WriteString("\n\n")
	if len(vals) > 0 {
		fmt.Fprintf(b, "- %s: min %s, median %s, max %s", fs[0].Metric, formatFloat(vals[0]), formatFloat(vals[len(vals)/2]), formatFloat(vals[len(vals)-1]))
		if fs[0].Threshold != nil {
			fmt.Fprintf(b, " (threshold %s)", formatFloat(*fs[0].Threshold))
		}
		b.WriteString("\n")
	}
	if fs[0].Fix != "" {
		fmt.Fprintf(b, "- fix: %s\n", fs[0].Fix)
	}
	b.WriteString("- the three largest:\n")
	worst := append([]Finding(nil), fs...)
	sort.SliceStable(worst, func(i, j int) bool {
		vi, vj := 0.0, 0.0
		if worst[i].Value != nil {
			vi = *worst[i].Value
		}
		if worst[j].Value != nil {
			vj = *worst[j].Value
		}
		return vi > vj
	})
	for _, f := range worst[:min(3, len(worst))] {
		fmt.Fprintf(b, "  - %s\n", f.Message)
	}
	b.WriteString("\n")
}

// RankRanges writes sorted ranks compactly: 0-7, 12, 14-15.
func RankRanges(ranks []int) string {
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
		} else {
			parts = append(parts, strconv.Itoa(ranks[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// MaxTableRows caps a metric table in the markdown report (the JSON report
// and the metrics table keep every row): a 1,024-rank run would otherwise
// print a thousand rows per metric.
const MaxTableRows = 64

// writeCapped writes a recommendation's list items, the first five and a
// count of the rest when a fix is called for by many ranks.
func writeCapped(b *strings.Builder, label string, items []string) {
	for i, x := range items {
		if i == 5 {
			fmt.Fprintf(b, "   - ... and %d more\n", len(items)-5)
			return
		}
		fmt.Fprintf(b, "   - %s: %s\n", label, x)
	}
}

var becauseRank = regexp.MustCompile(`^(.*) \(rank (\d+)\)$`)

// compactBecause lists the findings behind a recommendation, one detector
// with its ranks as ranges: "gpu_idle (ranks 0-1023)" rather than 1,024
// entries.
func compactBecause(items []string) string {
	var order []string
	ranks := map[string][]int{}
	for _, it := range items {
		key, r := it, -1
		if m := becauseRank.FindStringSubmatch(it); m != nil {
			key = m[1]
			r, _ = strconv.Atoi(m[2])
		}
		if _, ok := ranks[key]; !ok {
			order = append(order, key)
		}
		if r >= 0 {
			ranks[key] = append(ranks[key], r)
		} else if ranks[key] == nil {
			ranks[key] = []int{}
		}
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		rs := ranks[k]
		switch len(rs) {
		case 0:
			parts = append(parts, k)
		case 1:
			parts = append(parts, fmt.Sprintf("%s (rank %d)", k, rs[0]))
		default:
			sort.Ints(rs)
			parts = append(parts, fmt.Sprintf("%s (ranks %s)", k, RankRanges(rs)))
		}
	}
	return strings.Join(parts, ", ")
}
