package detectors

import (
	"strings"

	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/gpu"
)

// roofline builds the run's chart from the roofline_shapes metric, or nil
// when the run has none or its GPU is not in the catalog.
func (r *chartSource) roofline(run report.RunInfo) *report.RooflineChart {
	if len(run.GPUSpecs) == 0 {
		return nil
	}
	spec, ok := gpu.Lookup(run.GPUSpecs[0])
	if !ok {
		return nil
	}
	rows := r.metricRows("roofline_shapes", run.RunID)
	if len(rows) == 0 {
		return nil
	}
	c := &report.RooflineChart{GPU: spec.Key, BWTBs: spec.HBMGBs / 1000, Peaks: map[string]float64{}}
	for _, m := range rows {
		subject, _ := m["subject"].(string)
		label, bound, _ := strings.Cut(subject, ", ")
		bound = strings.TrimSuffix(bound, "-bound")
		tf := report.Num(m["achieved_tflops"])
		if tf <= 0 || report.Num(m["intensity"]) <= 0 {
			c.Skipped++
			continue
		}
		c.Points = append(c.Points, report.RoofPoint{Label: label, Bound: bound, Intensity: report.Num(m["intensity"]), TFLOPS: tf,
			RoofPct: report.Num(m["roof_pct"]), TimeNS: report.Num(m["time_ns"]), SavedNS: report.Num(m["saved_ns"])})
		for _, dt := range []string{"bf16", "fp16", "fp8", "fp32"} {
			if strings.HasSuffix(label, " "+dt) {
				c.Peaks[dt] = peakOf(spec, dt)
			}
		}
	}
	if len(c.Points) == 0 {
		return nil
	}
	return c
}

func peakOf(s gpu.Spec, dtype string) float64 {
	switch dtype {
	case "bf16":
		return s.BF16
	case "fp16":
		return s.FP16
	case "fp8":
		return s.FP8
	case "fp32":
		return s.FP32
	}
	return 0
}
