package detectors

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"

	"github.com/trainscope/trainscope/detectors/causes"
	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/sql/duck"
)

// Failures lists the results whose detector failed.
func Failures(results []Result) []report.DetectorFailure {
	var out []report.DetectorFailure
	for _, res := range results {
		if res.Err != nil {
			out = append(out, report.DetectorFailure{Detector: res.Detector.Name, Kind: res.Detector.Kind, Error: res.Err.Error()})
		}
	}
	return out
}

// BuildReport reads findings from the store and metric tables from
// results, reads what the causes are judged from (causes.Input), has
// causes.Judge decide the causes and the verdict, and gathers the charts.
// Within Analyze it reads the shared views the detectors computed; alone
// (after Run) it reads them from the store again.
func BuildReport(ctx context.Context, st *duck.Store, results []Result) (*report.Report, error) {
	r := &report.Report{Roles: roleIndex(results)}
	if err := loadRuns(ctx, st, r); err != nil {
		return nil, err
	}
	r.Failed = Failures(results)
	for _, res := range ordered(results) {
		if res.Detector.Kind != KindMetric || res.Err != nil {
			continue
		}
		t := report.MetricTable{Detector: res.Detector.Name, Category: res.Detector.Category,
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
	if err := loadFindings(ctx, st, r); err != nil {
		return nil, err
	}
	in, err := loadCauseInput(ctx, st, r, causesOf(results))
	if err != nil {
		return nil, err
	}
	v := causes.Judge(in)
	r.Findings, r.Causes, r.Headline, r.Summary, r.Recommendations = v.Findings, v.Causes, v.Headlines, v.Summary, v.Recommendations
	if err := buildCharts(ctx, st, r, v.PerRank); err != nil {
		return nil, err
	}
	return r, nil
}

func loadRuns(ctx context.Context, st *duck.Store, r *report.Report) error {
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
		var ri report.RunInfo
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
			ri.Ranks = append(ri.Ranks, int(report.Int(v)))
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

func loadFindings(ctx context.Context, st *duck.Store, r *report.Report) error {
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
		var f report.Finding
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

// appendNew appends s unless it is empty or already there.
func appendNew(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
