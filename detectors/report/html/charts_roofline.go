package html

import (
	"fmt"
	"math"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/detectors/report"
)

var boundColour = map[string]string{"compute": colCompute, "memory": colOther, "latency": colWait}

// rooflineView is the roofline on log-log axes: FLOP per byte against
// TFLOP/s, the HBM roof rising to each dtype's compute roof, one dot per
// unique call sized by its GPU time and coloured by what bounds it.
type rooflineView struct {
	GPU                      string
	BWTBs                    n2
	Width, Height            n0
	Left, Right, Top, Bottom n0 // the plot's edges
	XLabelY, YLabelX, AxisY  n0
	MidX, MidY, RoofLabelX   n0
	XGrid, YGrid             []gridLine
	Roofs                    []roofLine
	Dots                     []roofDot
	Skipped                  int
}

// gridLine is one decade of an axis: its line at At, its label at LabelAt.
type gridLine struct {
	At, LabelAt n1
	Label       string
}

type roofLine struct {
	Points []point
	LabelY n1
	Label  string
}

type point struct{ X, Y n1 }

type roofDot struct {
	X, Y, R              n1
	Colour, Label, Bound string
	Intensity, TFLOPS    n2
	RoofPct              n0
	Time, Saved          string
}

func rooflineChart(c *report.RooflineChart) *rooflineView {
	if c == nil {
		return nil
	}
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
	v := &rooflineView{GPU: c.GPU, BWTBs: n2(c.BWTBs), Width: width, Height: height,
		Left: left, Right: width - right, Top: top, Bottom: height - bottom,
		XLabelY: height - bottom + 14, YLabelX: left - 4, AxisY: height - 6,
		MidX: (left + width - right) / 2, MidY: (top + height - bottom) / 2, RoofLabelX: width - right + 4,
		Skipped: c.Skipped}
	// grid and axes: one line per decade
	for e := x0; e <= x1; e++ {
		x := px(math.Pow(10, e))
		v.XGrid = append(v.XGrid, gridLine{At: n1(x), LabelAt: n1(x), Label: decade(e)})
	}
	for e := y0; e <= y1; e++ {
		y := py(math.Pow(10, e))
		v.YGrid = append(v.YGrid, gridLine{At: n1(y), LabelAt: n1(y + 4), Label: decade(e)})
	}
	// roofs: bandwidth x intensity up to each peak
	for dt, peak := range sortedPeaks(c.Peaks) {
		ridge := peak / c.BWTBs
		xa := math.Pow(10, x0)
		v.Roofs = append(v.Roofs, roofLine{
			Points: []point{{n1(px(xa)), n1(py(max(xa*c.BWTBs, math.Pow(10, y0))))}, {n1(px(ridge)), n1(py(peak))}, {width - right, n1(py(peak))}},
			LabelY: n1(py(peak) + 4), Label: fmt.Sprintf("%s %.0f", strings.ToUpper(dt), peak)})
	}
	for _, p := range c.Points {
		col := boundColour[p.Bound]
		if col == "" {
			col = colCompute
		}
		v.Dots = append(v.Dots, roofDot{X: n1(px(p.Intensity)), Y: n1(py(p.TFLOPS)), R: n1(3 + 9*math.Sqrt(p.TimeNS/maxTime(c.Points))),
			Colour: col, Label: p.Label, Bound: p.Bound, Intensity: n2(p.Intensity), TFLOPS: n2(p.TFLOPS), RoofPct: n0(p.RoofPct),
			Time: mdfmt.Duration(p.TimeNS), Saved: mdfmt.Duration(p.SavedNS)})
	}
	return v
}

func decade(e float64) string {
	if e >= 0 {
		return fmt.Sprintf("%.0f", math.Pow(10, e))
	}
	return fmt.Sprintf("%g", math.Pow(10, e))
}

func maxTime(ps []report.RoofPoint) float64 {
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
