package detectors

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/trainscope/trainscope/gpu"
)

// RooflineChart is a run's roofline: the GPU's roofs and one point per
// unique operator call (roofline_shapes' rows), at its arithmetic
// intensity and achieved TFLOP/s.
type RooflineChart struct {
	GPU     string
	BWTBs   float64            // HBM bandwidth, TB/s
	Peaks   map[string]float64 // dense peak TFLOP/s per dtype drawn
	Points  []RoofPoint
	Skipped int // unique calls without FLOPs (copies, fills, lookups): no place on a FLOP/s axis
}

// RoofPoint is one unique call on the roofline chart.
type RoofPoint struct {
	Label             string
	Bound             string // compute, memory, latency
	Intensity, TFLOPS float64
	RoofPct           float64
	TimeNS, SavedNS   float64
}

// roofline builds the run's chart from the roofline_shapes metric, or nil
// when the run has none or its GPU is not in the catalog.
func (r *Report) roofline(run RunInfo) *RooflineChart {
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
	c := &RooflineChart{GPU: spec.Key, BWTBs: spec.HBMGBs / 1000, Peaks: map[string]float64{}}
	for _, m := range rows {
		subject, _ := m["subject"].(string)
		label, bound, _ := strings.Cut(subject, ", ")
		bound = strings.TrimSuffix(bound, "-bound")
		tf := num(m["achieved_tflops"])
		if tf <= 0 || num(m["intensity"]) <= 0 {
			c.Skipped++
			continue
		}
		c.Points = append(c.Points, RoofPoint{Label: label, Bound: bound, Intensity: num(m["intensity"]), TFLOPS: tf,
			RoofPct: num(m["roof_pct"]), TimeNS: num(m["time_ns"]), SavedNS: num(m["saved_ns"])})
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

var boundColour = map[string]string{"compute": colCompute, "memory": colOther, "latency": colWait}

// writeRoofline draws the roofline on log-log axes: FLOP per byte against
// TFLOP/s, the HBM roof rising to each dtype's compute roof, one dot per
// unique call sized by its GPU time and coloured by what bounds it.
func writeRoofline(b *strings.Builder, c *RooflineChart) {
	const width, height, left, bottom, top, right = 960.0, 380.0, 64.0, 40.0, 12.0, 110.0
	maxPeak := 0.0
	for _, p := range c.Peaks {
		maxPeak = max(maxPeak, p)
	}
	x0, x1 := -2.0, 4.0 // log10 FLOP/B
	y0, y1 := -2.0, math.Ceil(math.Log10(max(maxPeak, 1)*1.5))
	for _, p := range c.Points {
		x0 = min(x0, math.Floor(math.Log10(p.Intensity)))
		x1 = max(x1, math.Ceil(math.Log10(p.Intensity)))
		y0 = min(y0, math.Floor(math.Log10(p.TFLOPS)))
		y1 = max(y1, math.Ceil(math.Log10(p.TFLOPS)))
	}
	px := func(v float64) float64 { return left + (math.Log10(v)-x0)/(x1-x0)*(width-left-right) }
	py := func(v float64) float64 { return height - bottom - (math.Log10(v)-y0)/(y1-y0)*(height-bottom-top) }
	fmt.Fprintf(b, "<figure class=\"chart\" data-chart=\"roofline\"><figcaption>Roofline on %s: each unique operator call's achieved TFLOP/s against its FLOPs per byte (from its recorded shapes), with the HBM roof (%.2f TB/s) and the dense compute roofs</figcaption>\n",
		html.EscapeString(c.GPU), c.BWTBs)
	legend(b, [2]string{colCompute, "compute-bound"}, [2]string{colOther, "memory-bound"}, [2]string{colWait, "latency-bound"})
	fmt.Fprintf(b, `<svg viewBox="0 0 %.0f %.0f" width="100%%" role="img" aria-label="roofline">`, width, height)
	// grid and axes: one line per decade
	for e := x0; e <= x1; e++ {
		x := px(math.Pow(10, e))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#eee"/><text x="%.1f" y="%.0f" text-anchor="middle" class="val">%s</text>`,
			x, top, x, height-bottom, x, height-bottom+14, decade(e))
	}
	for e := y0; e <= y1; e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#eee"/><text x="%.0f" y="%.1f" text-anchor="end" class="val">%s</text>`,
			left, y, width-right, y, left-4, y+4, decade(e))
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="middle">FLOP per byte of device memory traffic</text>`, (left+width-right)/2, height-6)
	fmt.Fprintf(b, `<text x="12" y="%.0f" transform="rotate(-90 12 %.0f)" text-anchor="middle">TFLOP/s</text>`, (top+height-bottom)/2, (top+height-bottom)/2)
	// roofs: bandwidth x intensity up to each peak
	for dt, peak := range sortedPeaks(c.Peaks) {
		ridge := peak / c.BWTBs
		xa := math.Pow(10, x0)
		fmt.Fprintf(b, `<polyline fill="none" stroke="#333" stroke-width="1.5" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`,
			px(xa), py(max(xa*c.BWTBs, math.Pow(10, y0))), px(ridge), py(peak), width-right, py(peak))
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f">%s %.0f</text>`, width-right+4, py(peak)+4, strings.ToUpper(dt), peak)
	}
	for _, p := range c.Points {
		r := 3 + 9*math.Sqrt(p.TimeNS/maxTime(c.Points))
		col := boundColour[p.Bound]
		if col == "" {
			col = colCompute
		}
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s" fill-opacity="0.7" stroke="#222" stroke-width="0.5"><title>%s: %.2f FLOP/B, %.2f TFLOP/s, %.0f%% of its roofline, %s of GPU time, %s less at the roofline (%s-bound)</title></circle>`,
			px(p.Intensity), py(p.TFLOPS), r, col, html.EscapeString(p.Label), p.Intensity, p.TFLOPS, p.RoofPct, Duration(p.TimeNS), Duration(p.SavedNS), p.Bound)
	}
	b.WriteString("</svg>")
	if c.Skipped > 0 {
		fmt.Fprintf(b, "<p class=\"note\">%d unique call(s) with no floating-point work to speak of (copies, fills, lookups, tiny kernels) have no place on this chart; the roofline_shapes table lists them.</p>", c.Skipped)
	}
	b.WriteString("</figure>\n")
}

func decade(e float64) string {
	if e >= 0 {
		return fmt.Sprintf("%.0f", math.Pow(10, e))
	}
	return fmt.Sprintf("%g", math.Pow(10, e))
}

func maxTime(ps []RoofPoint) float64 {
	m := 1.0
	for _, p := range ps {
		m = max(m, p.TimeNS)
	}
	return m
}

// sortedPeaks gives the peaks in a fixed order, so that the page is the
// same on every run.
func sortedPeaks(m map[string]float64) func(func(string, float64) bool) {
	return func(yield func(string, float64) bool) {
		for _, dt := range []string{"fp8", "bf16", "fp16", "fp32"} {
			if p, ok := m[dt]; ok && p > 0 {
				if !yield(dt, p) {
					return
				}
			}
		}
	}
}
