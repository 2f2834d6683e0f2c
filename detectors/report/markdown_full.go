package report

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/gpu"
)

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
			if len(t.Rows) > 0 && r.SectionOf(Finding{Detector: t.Detector, Category: t.Category}) == sec {
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
			if f.Category != "summary" && r.SectionOf(f) == sec {
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
	mdfmt.Table(b, t.Columns, rows)
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
			have = append(have, fmt.Sprintf("%s %s", strings.ToUpper(p.name), mdfmt.Float(p.v)))
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
	line += fmt.Sprintf("; %s GiB at %s GB/s", mdfmt.Float(s.MemGiB), mdfmt.Float(s.HBMGBs))
	if s.LinkGBs > 0 {
		line += fmt.Sprintf(", GPU links %s GB/s", mdfmt.Float(s.LinkGBs))
	} else {
		line += ", no GPU links (PCIe)"
	}
	return line
}

func rankList(ranks []int) string {
	if len(ranks) == 0 {
		return ""
	}
	return "(" + mdfmt.RankRanges(ranks) + ")"
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
		fmt.Fprintf(b, "- %s: %s", f.Metric, mdfmt.Float(*f.Value))
		if f.Threshold != nil {
			fmt.Fprintf(b, " (threshold %s)", mdfmt.Float(*f.Threshold))
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
		fmt.Fprintf(b, " on %d ranks (%s)", len(ranks), mdfmt.RankRanges(ranks))
	}
	b.WriteString("\n\n")
	if len(vals) > 0 {
		fmt.Fprintf(b, "- %s: min %s, median %s, max %s", fs[0].Metric, mdfmt.Float(vals[0]), mdfmt.Float(vals[len(vals)/2]), mdfmt.Float(vals[len(vals)-1]))
		if fs[0].Threshold != nil {
			fmt.Fprintf(b, " (threshold %s)", mdfmt.Float(*fs[0].Threshold))
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
		sort.Ints(rs)
		parts = append(parts, withRanks(k, rs))
	}
	return strings.Join(parts, ", ")
}
