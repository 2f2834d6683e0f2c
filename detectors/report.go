package detectors

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/sql/duck"
)

// Report is everything a rendered report shows, for one or more runs.
type Report struct {
	// Headline is each run's verdict, the report's first line
	Headline        []Headline       `json:"headline"`
	Runs            []RunInfo        `json:"runs"`
	Summary         []SummaryLine    `json:"summary"`
	Metrics         []MetricTable    `json:"metrics"`
	Findings        []Finding        `json:"findings"`
	Recommendations []Recommendation `json:"recommendations"`
	// Failed lists the detectors whose query failed: their results are
	// missing from this report, the rest is complete.
	Failed []DetectorFailure `json:"detector_failures,omitempty"`
	// Causes are the root causes of lost step time, costliest first.
	Causes []Cause `json:"root_causes,omitempty"`
	// Status is set on a report of a run served live whose data is not
	// all in: a partial report (more will come) or an incomplete one
	// (some batches were rejected and never will). Nil on a final report.
	Status *RunStatus `json:"status,omitempty"`

	causes     CausesConfig               // the cause graph's thresholds
	detectors  map[string]*Detector       // by name: their place in the cause graph
	costs      map[string]map[int]float64 // per run and rank: the step time it held up (a typical step)
	whys       map[string]map[int]string  // per run and rank: what mostly made it late (whyText's keys)
	medianStep map[string]float64         // per run: the median step time
	charts     map[string]*Charts         // per run: what the HTML report draws
	// per run, from the step-time account: where a typical step goes, and
	// the outlier steps
	breakdowns   map[string]string
	outlierLines map[string][]string
	// per run, rank and account key ("idle/sync/aten::item"): ns a
	// typical step
	acctPerRank map[string]map[string]map[int]float64
}

// MedianStepNS is the median step time of run, in ns (0 when unknown).
func (r *Report) MedianStepNS(run string) float64 { return r.medianStep[run] }

// RunStatus says why a report does not cover all of a run's data.
type RunStatus struct {
	// Partial: the run has data on its way (messages not yet stored,
	// ranks not yet complete). The report will be replaced once it has
	// arrived; alerts hold off until then.
	Partial bool     `json:"partial"`
	Reasons []string `json:"reasons,omitempty"`
	// Missing are data that will never arrive (rejected batches).
	Missing []string `json:"missing,omitempty"`
}

// DetectorFailure is a detector that could not run, and why.
type DetectorFailure struct {
	Detector string `json:"detector"`
	Kind     string `json:"kind"`
	Error    string `json:"error"`
}

// Failures lists the results whose detector failed.
func Failures(results []Result) []DetectorFailure {
	var out []DetectorFailure
	for _, res := range results {
		if res.Err != nil {
			out = append(out, DetectorFailure{Detector: res.Detector.Name, Kind: res.Detector.Kind, Error: res.Err.Error()})
		}
	}
	return out
}

// RunInfo describes an analysed run.
type RunInfo struct {
	RunID     string   `json:"run_id"`
	Ranks     []int    `json:"ranks"`
	WorldSize int      `json:"world_size"`
	GPUs      []string `json:"gpus"`
	GPUSpecs  []string `json:"gpu_specs,omitempty"`     // catalog keys of the GPUs, where known
	Dtypes    []string `json:"matmul_dtypes,omitempty"` // dtypes of the matmul and attention operators the trace recorded
	Steps     string   `json:"steps_analysed"`
	Events    int64    `json:"events"`
	Sources   int      `json:"sources"`
	// GPUActivities counts the kernels, copies and memsets its traces hold
	// (0: a CPU-only trace, or a memory snapshot alone); TraceRanks the
	// ranks that came from a trace, not from a snapshot alone
	GPUActivities int64 `json:"gpu_activities"`
	TraceRanks    int   `json:"trace_ranks"`
}

// Headline is a run's verdict in one sentence: its costliest root cause
// (Cause names its id), or why there is none.
type Headline struct {
	RunID   string  `json:"run_id"`
	Text    string  `json:"text"`
	Kind    string  `json:"kind"` // the cause's kind; "none", "no_gpu_work" or "memory_only" without one
	Cause   string  `json:"cause,omitempty"`
	CostNS  float64 `json:"cost_ns_per_step,omitempty"`
	CostPct float64 `json:"cost_pct_of_step,omitempty"`
	Fix     string  `json:"fix,omitempty"`
	// Balanced is set for a run of several ranks in which no rank holds
	// the others up by a noticeable share of the step (Kind is "none").
	Balanced bool `json:"-"`
	// Limiter is what bounds the run's steps (the bottleneck_class
	// finding's message), "" when nothing was classified.
	Limiter string `json:"-"`
	// Lines are the verdict's lines under the headline, in order: what
	// part of the job was traced, where a typical step goes, the outlier
	// steps, the limiter and the rest of the summary. Renderers print
	// them as they are.
	Lines []string `json:"-"`
}

// SummaryLine is one statement of the summary, with the detector behind it.
type SummaryLine struct {
	RunID    string `json:"run_id"`
	Text     string `json:"text"`
	Detector string `json:"detector,omitempty"`
}

// MetricTable is a metric detector's output.
type MetricTable struct {
	Detector    string   `json:"detector"`
	Category    string   `json:"category"`
	Description string   `json:"description"`
	Columns     []string `json:"columns"`
	Rows        [][]any  `json:"rows"`
}

// Finding is one row of the findings table, with its place in the cause
// graph: the root causes it shows (Shows) or is explained by (CausedBy).
type Finding struct {
	ID         string   `json:"id"`
	CausedBy   []string `json:"caused_by,omitempty"`
	Shows      []string `json:"shows,omitempty"`
	RunID      string   `json:"run_id"`
	Detector   string   `json:"detector"`
	Category   string   `json:"category"`
	Severity   string   `json:"severity"`
	Rank       *int64   `json:"rank,omitempty"`
	Host       string   `json:"host,omitempty"`
	StepLo     *int64   `json:"step_lo,omitempty"`
	StepHi     *int64   `json:"step_hi,omitempty"`
	Subject    string   `json:"subject,omitempty"`
	Metric     string   `json:"metric"`
	Value      *float64 `json:"value,omitempty"`
	Threshold  *float64 `json:"threshold,omitempty"`
	Message    string   `json:"message"`
	Fix        string   `json:"fix,omitempty"`
	Evidence   any      `json:"evidence,omitempty"`
	Impact     string   `json:"impact,omitempty"`
	Validation string   `json:"validation,omitempty"`
	Confidence string   `json:"confidence"`
	Needs      string   `json:"needs,omitempty"`
}

// Recommendation is a fix, with the findings that call for it, what it
// should gain and how to tell that it did.
type Recommendation struct {
	Severity   string   `json:"severity"`
	Fix        string   `json:"fix"`
	Because    []string `json:"because"`
	Impact     []string `json:"impact,omitempty"`
	Validation []string `json:"validation,omitempty"`
	Hypothesis bool     `json:"hypothesis"`
	Needs      []string `json:"needs,omitempty"`
}

func severityRank(s string) int {
	for i, v := range Severities {
		if v == s {
			return i
		}
	}
	return -1
}

// BuildReport reads findings from the store and metric tables from results.
// Within Analyze it reads the shared views the detectors computed; alone
// (after Run) it reads them from the store again.
func BuildReport(ctx context.Context, st *duck.Store, results []Result) (*Report, error) {
	r := &Report{causes: causesOf(results), detectors: detectorIndex(results)}
	if err := r.loadRuns(ctx, st); err != nil {
		return nil, err
	}
	r.Failed = Failures(results)
	for _, res := range ordered(results) {
		if res.Detector.Kind != KindMetric || res.Err != nil {
			continue
		}
		t := MetricTable{Detector: res.Detector.Name, Category: res.Detector.Category,
			Description: res.Detector.Description, Columns: res.Columns}
		for _, row := range res.Rows {
			out := make([]any, len(row))
			for i, v := range row {
				out[i] = normalize(v)
			}
			t.Rows = append(t.Rows, out)
		}
		r.Metrics = append(r.Metrics, t)
	}
	if err := r.loadFindings(ctx, st); err != nil {
		return nil, err
	}
	if err := r.buildCauses(ctx, st); err != nil {
		return nil, err
	}
	if err := r.buildCharts(ctx, st); err != nil {
		return nil, err
	}
	r.buildSummary()
	r.buildHeadlines()
	r.buildRecommendations()
	return r, nil
}

func (r *Report) loadRuns(ctx context.Context, st *duck.Store) error {
	rows, err := st.Query(ctx, `
SELECT k.run_id, list(k.rank ORDER BY k.rank), max(k.world_size), list(DISTINCT k.gpu_name ORDER BY k.gpu_name) FILTER (WHERE k.gpu_name <> ''),
       sum(k.events)::BIGINT, count(*),
       (SELECT coalesce(min(step_lo)::VARCHAR || '-' || max(step_hi)::VARCHAR, 'all') FROM analysis_window w WHERE w.run_id = k.run_id),
       (SELECT list(DISTINCT lower(flops_dtype) ORDER BY lower(flops_dtype)) FROM slices_detail d WHERE d.run_id = k.run_id AND d.flops_dtype IS NOT NULL AND d.op_class IN ('gemm', 'attention', 'conv')),
       (SELECT count(*) FROM slices_detail c WHERE c.run_id = k.run_id AND c.kind IN ('kernel', 'comm', 'memcpy', 'memset')),
       count(*) FILTER (WHERE coalesce(k.rank_source, '') <> 'snapshot')
FROM ranks k GROUP BY k.run_id ORDER BY k.run_id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var ri RunInfo
		var ranks, gpus, dtypes any
		var world sql.NullInt64
		if err := rows.Scan(&ri.RunID, &ranks, &world, &gpus, &ri.Events, &ri.Sources, &ri.Steps, &dtypes, &ri.GPUActivities, &ri.TraceRanks); err != nil {
			return err
		}
		for _, v := range asList(dtypes) {
			if s, ok := v.(string); ok {
				ri.Dtypes = append(ri.Dtypes, s)
			}
		}
		for _, v := range asList(ranks) {
			ri.Ranks = append(ri.Ranks, int(toInt(v)))
		}
		for _, v := range asList(gpus) {
			if s, ok := v.(string); ok {
				ri.GPUs = append(ri.GPUs, s)
				if spec, ok := gpu.Lookup(s); ok {
					ri.GPUSpecs = appendNew(ri.GPUSpecs, spec.Key)
				}
			}
		}
		ri.WorldSize = int(world.Int64)
		r.Runs = append(r.Runs, ri)
	}
	return rows.Err()
}

func (r *Report) loadFindings(ctx context.Context, st *duck.Store) error {
	rows, err := st.Query(ctx, `
SELECT run_id, detector, category, severity, rank, host, step_lo, step_hi, subject, metric, value, threshold, message, fix, evidence,
       impact, validation, coalesce(confidence, 'measured'), needs
FROM findings
ORDER BY run_id, CASE severity WHEN 'critical' THEN 0 WHEN 'warn' THEN 1 ELSE 2 END, detector, rank NULLS FIRST, subject NULLS FIRST, message`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var f Finding
		var rank, lo, hi sql.NullInt64
		var host, subject, fix, evidence, impact, validation, needs sql.NullString
		var value, threshold sql.NullFloat64
		if err := rows.Scan(&f.RunID, &f.Detector, &f.Category, &f.Severity, &rank, &host, &lo, &hi, &subject,
			&f.Metric, &value, &threshold, &f.Message, &fix, &evidence, &impact, &validation, &f.Confidence, &needs); err != nil {
			return err
		}
		f.Rank, f.StepLo, f.StepHi = optInt(rank), optInt(lo), optInt(hi)
		f.Host, f.Subject, f.Fix = host.String, subject.String, fix.String
		f.Impact, f.Validation, f.Needs = impact.String, validation.String, needs.String
		if value.Valid {
			v := mdfmt.Round(value.Float64)
			f.Value = &v
		}
		if threshold.Valid {
			v := mdfmt.Round(threshold.Float64)
			f.Threshold = &v
		}
		if evidence.Valid && evidence.String != "" {
			var ev any
			if json.Unmarshal([]byte(evidence.String), &ev) == nil {
				f.Evidence = roundAll(ev)
			} else {
				f.Evidence = evidence.String
			}
		}
		r.Findings = append(r.Findings, f)
	}
	return rows.Err()
}

func (r *Report) buildSummary() {
	for _, run := range r.Runs {
		r.memorySummary(run.RunID)
		for _, f := range r.Findings {
			if f.RunID == run.RunID && f.Category == "summary" {
				r.Summary = append(r.Summary, SummaryLine{RunID: run.RunID, Text: f.Message, Detector: f.Detector})
			}
		}
		counts := map[string]int{}
		for _, f := range r.Findings {
			if f.RunID == run.RunID && f.Category != "summary" {
				counts[f.Severity]++
			}
		}
		var parts []string
		for i := len(Severities) - 1; i >= 0; i-- {
			if n := counts[Severities[i]]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, Severities[i]))
			}
		}
		text := "no findings above their thresholds"
		if len(parts) > 0 {
			text = "findings: " + strings.Join(parts, ", ")
		}
		r.Summary = append(r.Summary, SummaryLine{RunID: run.RunID, Text: text})
	}
}

func (r *Report) buildRecommendations() {
	byFix := map[string]*Recommendation{}
	var order []string
	for _, f := range r.Findings {
		if f.Fix == "" {
			continue
		}
		rec, ok := byFix[f.Fix]
		if !ok {
			rec = &Recommendation{Severity: f.Severity, Fix: f.Fix}
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
		r.Recommendations = append(r.Recommendations, *byFix[k])
	}
	sort.SliceStable(r.Recommendations, func(i, j int) bool {
		a, b := r.Recommendations[i], r.Recommendations[j]
		if severityRank(a.Severity) != severityRank(b.Severity) {
			return severityRank(a.Severity) > severityRank(b.Severity)
		}
		return len(a.Because) > len(b.Because)
	})
}

func optInt(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	x := v.Int64
	return &x
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return nil
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case float64:
		return int64(x)
	}
	return 0
}

// normalize turns database values into JSON-stable Go values: integers as
// int64, floats rounded to 4 decimals.
func normalize(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		return int64(x)
	case float32:
		return mdfmt.Round(float64(x))
	case float64:
		return mdfmt.Round(x)
	case []byte:
		return string(x)
	case *big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
		f, _ := new(big.Float).SetInt(x).Float64()
		return f
	case interface{ Float64() float64 }:
		return mdfmt.Round(x.Float64())
	case fmt.Stringer:
		return x.String()
	}
	return v
}

func roundAll(v any) any {
	switch x := v.(type) {
	case float64:
		return mdfmt.Round(x)
	case map[string]any:
		for k, e := range x {
			x[k] = roundAll(e)
		}
	case []any:
		for i, e := range x {
			x[i] = roundAll(e)
		}
	}
	return v
}

// ordered sorts results as the report shows their tables: by their
// detectors' order header, then the rest by name.
func ordered(results []Result) []Result {
	pos := func(d *Detector) int {
		if d.Order > 0 {
			return d.Order
		}
		return math.MaxInt
	}
	out := append([]Result(nil), results...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Detector, out[j].Detector
		if pa, pb := pos(a), pos(b); pa != pb {
			return pa < pb
		}
		return a.Name < b.Name
	})
	return out
}

// memorySummary states each snapshot device's memory in one line.
func (r *Report) memorySummary(runID string) {
	for _, t := range r.Metrics {
		if t.Detector != "mem_summary" {
			continue
		}
		col := map[string]int{}
		for i, c := range t.Columns {
			col[c] = i
		}
		num := func(row []any, c string) float64 {
			if v, ok := row[col[c]].(float64); ok {
				return v
			}
			return float64(toInt(row[col[c]]))
		}
		for _, row := range t.Rows {
			if row[col["run_id"]] != runID {
				continue
			}
			reserved := num(row, "reserved_bytes")
			text := fmt.Sprintf("memory, rank %d %s: %s reserved, %s allocated (%.0f%% of reserved unused), free memory %.0f%% fragmented",
				toInt(row[col["rank"]]), row[col["subject"]], mdfmt.Bytes(reserved), mdfmt.Bytes(num(row, "allocated_bytes")),
				100*num(row, "unused_bytes")/math.Max(reserved, 1), num(row, "fragmentation_pct"))
			r.Summary = append(r.Summary, SummaryLine{RunID: runID, Text: text, Detector: "mem_summary"})
		}
	}
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

// Sections are the report's groups of findings, in PerfTracker's order
// (GPU compute, memory operations, communication, CUDA runtime, Python and
// CPU, slow nodes, hangs), then memory, the config audit and anything else.
var Sections = []string{"GPU compute", "GPU memory operations", "Communication", "CUDA runtime",
	"Host: Python, CPU ops, data loading", "Slow nodes", "Hangs", "GPU memory (allocator)", "Config audit", "Other"}

// SectionOf is the section a finding is reported under: a hang's and a
// slow host's (the findings of detectors whose cause header says so) have
// their own, the rest go by category.
func (r *Report) SectionOf(f Finding) string {
	switch r.detector(f.Detector).causeModel() {
	case causeHang:
		return "Hangs"
	case causeSlowHost:
		return "Slow nodes"
	}
	switch f.Category {
	case "utilization", "compute", "kernels", "steps":
		return "GPU compute"
	case "memory_ops":
		return "GPU memory operations"
	case "communication":
		return "Communication"
	case "runtime", "sync", "launch":
		return "CUDA runtime"
	case "cpu", "input":
		return "Host: Python, CPU ops, data loading"
	case "memory":
		return "GPU memory (allocator)"
	case "config", "config_memory":
		return "Config audit"
	case "hardware":
		return "GPU hardware (counters)"
	}
	return "Other"
}
