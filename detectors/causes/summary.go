package causes

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/detectors/report"
)

func (j *judge) buildSummary() {
	for _, run := range j.runs {
		j.memorySummary(run.RunID)
		for _, f := range j.findings {
			if f.RunID == run.RunID && f.Category == "summary" {
				j.summary = append(j.summary, report.SummaryLine{RunID: run.RunID, Text: f.Message, Detector: f.Detector})
			}
		}
		counts := map[string]int{}
		for _, f := range j.findings {
			if f.RunID == run.RunID && f.Category != "summary" {
				counts[f.Severity]++
			}
		}
		var parts []string
		for i := len(report.Severities) - 1; i >= 0; i-- {
			if n := counts[report.Severities[i]]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, report.Severities[i]))
			}
		}
		text := "no findings above their thresholds"
		if len(parts) > 0 {
			text = "findings: " + strings.Join(parts, ", ")
		}
		j.summary = append(j.summary, report.SummaryLine{RunID: run.RunID, Text: text})
	}
}

func (j *judge) buildRecommendations() {
	byFix := map[string]*report.Recommendation{}
	var order []string
	for _, f := range j.findings {
		if f.Fix == "" {
			continue
		}
		rec, ok := byFix[f.Fix]
		if !ok {
			rec = &report.Recommendation{Severity: f.Severity, Fix: f.Fix}
			byFix[f.Fix] = rec
			order = append(order, f.Fix)
		}
		if severityRank(f.Severity) > severityRank(rec.Severity) {
			rec.Severity = f.Severity
		}
		who := f.Detector
		if f.Rank != nil {
			who += fmt.Sprintf(" (rank %d)", *f.Rank)
		}
		rec.Because = append(rec.Because, who)
		rec.Impact = appendNew(rec.Impact, f.Impact)
		rec.Validation = appendNew(rec.Validation, f.Validation)
		rec.Needs = appendNew(rec.Needs, f.Needs)
		if f.Confidence == "hypothesis" {
			rec.Hypothesis = true
		}
	}
	for _, k := range order {
		j.recommendations = append(j.recommendations, *byFix[k])
	}
	sort.SliceStable(j.recommendations, func(a, b int) bool {
		ra, rb := j.recommendations[a], j.recommendations[b]
		if severityRank(ra.Severity) != severityRank(rb.Severity) {
			return severityRank(ra.Severity) > severityRank(rb.Severity)
		}
		return len(ra.Because) > len(rb.Because)
	})
}

// memorySummary states each snapshot device's memory in one line.
func (j *judge) memorySummary(runID string) {
	for _, t := range j.metrics {
		if t.Detector != "mem_summary" {
			continue
		}
		col := t.ColumnIndex()
		num := func(row []any, c string) float64 {
			if v, ok := row[col[c]].(float64); ok {
				return v
			}
			return float64(report.Int(row[col[c]]))
		}
		for _, row := range t.Rows {
			if row[col["run_id"]] != runID {
				continue
			}
			reserved := num(row, "reserved_bytes")
			text := fmt.Sprintf("memory, rank %d %s: %s reserved, %s allocated (%.0f%% of reserved unused), free memory %.0f%% fragmented",
				report.Int(row[col["rank"]]), row[col["subject"]], mdfmt.Bytes(reserved), mdfmt.Bytes(num(row, "allocated_bytes")),
				100*num(row, "unused_bytes")/math.Max(reserved, 1), num(row, "fragmentation_pct"))
			j.summary = append(j.summary, report.SummaryLine{RunID: runID, Text: text, Detector: "mem_summary"})
		}
	}
}

func severityRank(s string) int {
	for i, v := range report.Severities {
		if v == s {
			return i
		}
	}
	return -1
}

// appendNew appends s unless it is empty or already there.
func appendNew(list []string, s string) []string {
	if s == "" {
		return list
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
