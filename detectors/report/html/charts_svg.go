package html

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/detectors/report"
)

// Colours of the charts, one per kind of GPU time.
const (
	colCompute  = "#4c78a8"
	colTransfer = "#72b7b2"
	colWait     = "#e45756"
	colOther    = "#eeca3b"
	colIdle     = "#d4d4d4"
	colLate     = "#b71c1c"
)

// Coordinates in the charts' views print with 0, 1 or 2 decimals: enough
// for the drawing, short in the page. The type, not a template function,
// formats them: a big run's timeline has thousands of rects, and each
// function call in a template costs a reflective call.
type (
	n0 float64
	n1 float64
	n2 float64
)

func (v n0) String() string { return strconv.FormatFloat(float64(v), 'f', 0, 64) }
func (v n1) String() string { return strconv.FormatFloat(float64(v), 'f', 1, 64) }
func (v n2) String() string { return strconv.FormatFloat(float64(v), 'f', 2, 64) }

var chartColours = map[string]string{"compute": colCompute, "transfer": colTransfer, "wait": colWait,
	"other": colOther, "idle": colIdle, "late": colLate}

// chartFuncs are the template functions of charts_svg.tmpl: col is a
// colour by name (an unknown one fails the page, not paints it black).
var chartFuncs = map[string]any{
	"col": func(name string) (string, error) {
		if c, ok := chartColours[name]; ok {
			return c, nil
		}
		return "", fmt.Errorf("no chart colour %q", name)
	},
}

// runChartsView is one run's charts as charts_svg.tmpl draws them (inline
// SVG: no script, no network, the page stays one self-contained file); a
// nil chart is not drawn.
type runChartsView struct {
	RunID    string
	ShowRun  bool // a heading with the run's id: the page has several runs
	Ranks    *rankChartView
	Timeline *timelineView
	Kernels  *kernelChartView
	Roofline *rooflineView
}

// chartViews lays out the charts of every run that has any.
func chartViews(r *report.Report) []runChartsView {
	var out []runChartsView
	for _, run := range r.Runs {
		c := r.Charts(run.RunID)
		if c == nil || len(c.Ranks) == 0 && c.Timeline == nil && len(c.Kernels) == 0 && c.Roofline == nil {
			continue
		}
		out = append(out, runChartsView{RunID: run.RunID, ShowRun: len(r.Runs) > 1, Ranks: rankChart(c),
			Timeline: timelineChart(c.Timeline), Kernels: kernelChart(c.Kernels), Roofline: rooflineChart(c.Roofline)})
	}
	return out
}

// rankChartView is one stacked bar per rank: compute, transfer, wait,
// other and idle time, per step where the ranks have steps.
type rankChartView struct {
	Unit, Shown                 string
	Width, Height, LabelX, BarH n0
	Bars                        []rankBar
}

type rankBar struct {
	Rank     int
	Y, TextY n1
	Parts    []barPart
	TotalX   n1
	Total    string
}

type barPart struct {
	X                  n1
	W                  n2
	Colour, Name, Time string
}

func rankChart(c *report.Charts) *rankChartView {
	longest := 0.0
	for _, rt := range c.Ranks {
		longest = max(longest, rt.Compute+rt.Transfer+rt.Wait+rt.Other+rt.Idle)
	}
	if longest <= 0 {
		return nil
	}
	const width, label, right = 960.0, 70.0, 90.0
	barH := 18.0
	if len(c.Ranks) > 16 {
		barH = 9
	}
	v := &rankChartView{Unit: "per step", Width: width, Height: n0(20 + float64(len(c.Ranks))*(barH+3)), LabelX: label - 6, BarH: n0(barH)}
	if !c.PerStep {
		v.Unit = "over the analysed window"
	}
	if c.TotalRanks > len(c.Ranks) {
		v.Shown = fmt.Sprintf("; %d of %d ranks shown: the root causes' ranks and their peers first, then those whose split differs most from the median rank's", len(c.Ranks), c.TotalRanks)
	}
	scale := (width - label - right) / longest
	for i, rt := range c.Ranks {
		y := 4 + float64(i)*(barH+3)
		bar := rankBar{Rank: rt.Rank, Y: n1(y), TextY: n1(y + barH*0.75)}
		x := label
		for _, part := range []struct {
			v         float64
			col, name string
		}{{rt.Compute, colCompute, "compute"}, {rt.Transfer, colTransfer, "transfer"}, {rt.Wait, colWait, "wait"},
			{rt.Other, colOther, "other"}, {rt.Idle, colIdle, "idle"}} {
			if part.v <= 0 {
				continue
			}
			w := part.v * scale
			bar.Parts = append(bar.Parts, barPart{X: n1(x), W: n2(w), Colour: part.col, Name: part.name, Time: mdfmt.Duration(part.v)})
			x += w
		}
		bar.TotalX, bar.Total = n1(x+4), mdfmt.Duration(rt.Compute+rt.Transfer+rt.Wait+rt.Other+rt.Idle)
		v.Bars = append(v.Bars, bar)
	}
	return v
}

// timelineView is one lane per rank across the chosen step: compute
// density as shading, each collective as its wait (red) then transfer
// (teal), and a mark where a late member arrived and held the others up.
type timelineView struct {
	Why, Span, Shown      string
	Width, Height, LabelX n0
	PlotX, PlotW, LaneH   n0
	HalfH, LineY2, TickY  n1
	Lanes                 []laneView
	Marks                 []lateMark // drawn over every lane
	Ticks                 []axisTick
}

type laneView struct {
	Rank            int
	Y, TextY, HalfY n1
	Shades          []shadeRun
	Colls           []collBars
}

// shadeRun is a run of time slices equally busy, drawn as one rect.
type shadeRun struct {
	X, W    n2
	Opacity n1
}

// collBars is a collective: its wait and its transfer (a zero W: none).
type collBars struct {
	WaitX, WaitW, TransferX, TransferW n2
	Tip                                string
}

type lateMark struct {
	X, Y        n1
	Rank        int
	Name, Block string
	Line        bool // a dashed line down the lanes: it held them up 1% of the step or more
}

type axisTick struct {
	X      n1
	Label  string
	Anchor string // text-anchor: the last label ends at the plot's edge, inside the drawing
}

func timelineChart(tl *report.Timeline) *timelineView {
	if tl == nil {
		return nil
	}
	const width, label, plotW = 960.0, 70.0, 960.0 - 70 - 10
	laneH := 16.0
	if len(tl.Lanes) > 16 {
		laneH = 10
	}
	h := 24 + float64(len(tl.Lanes))*(laneH+4)
	span := float64(tl.EndNS - tl.StartNS)
	x := func(ns int64) float64 { return label + plotW*float64(ns-tl.StartNS)/span }
	v := &timelineView{Why: tl.Why, Span: mdfmt.Duration(span), Width: width, Height: n0(h), LabelX: label - 6,
		PlotX: label, PlotW: plotW, LaneH: n0(laneH), HalfH: n1(laneH * 0.5), LineY2: n1(h - 20), TickY: n1(h - 6)}
	if len(tl.Lanes) < tl.TotalRanks {
		v.Shown = fmt.Sprintf("; %d of %d ranks shown: the root causes' and their peers' first", len(tl.Lanes), tl.TotalRanks)
	}
	bw := plotW / float64(tl.Buckets)
	for i, l := range tl.Lanes {
		y := 4 + float64(i)*(laneH+4)
		lane := laneView{Rank: l.Rank, Y: n1(y), TextY: n1(y + laneH*0.75), HalfY: n1(y + laneH*0.5)}
		// runs of equal shade as one rect each
		for j := 0; j < len(l.Compute); {
			k := j
			q := shade(l.Compute[j])
			for k < len(l.Compute) && shade(l.Compute[k]) == q {
				k++
			}
			if q > 0 {
				lane.Shades = append(lane.Shades, shadeRun{X: n2(label + float64(j)*bw), W: n2(float64(k-j) * bw), Opacity: n1(q)})
			}
			j = k
		}
		for _, c := range l.Colls {
			cb := collBars{Tip: fmt.Sprintf("rank %d %s: waited %s, transfer %s", l.Rank, c.Name,
				mdfmt.Duration(float64(c.WaitEndNS-c.StartNS)), mdfmt.Duration(float64(c.End-c.WaitEndNS)))}
			if c.WaitEndNS > c.StartNS {
				cb.WaitX, cb.WaitW = n2(x(c.StartNS)), n2(max(0.5, x(c.WaitEndNS)-x(c.StartNS)))
			}
			if c.End > c.WaitEndNS {
				cb.TransferX, cb.TransferW = n2(x(c.WaitEndNS)), n2(max(0.5, x(c.End)-x(c.WaitEndNS)))
			}
			lane.Colls = append(lane.Colls, cb)
			if c.Last {
				v.Marks = append(v.Marks, lateMark{X: n1(x(c.StartNS)), Y: n1(y), Rank: l.Rank, Name: c.Name,
					Block: mdfmt.Duration(float64(c.BlockNS)), Line: float64(c.BlockNS) >= 0.01*span})
			}
		}
		v.Lanes = append(v.Lanes, lane)
	}
	for i := 0; i <= 4; i++ {
		ns := tl.StartNS + int64(float64(i)*span/4)
		anchor := "middle"
		if i == 4 {
			anchor = "end"
		}
		v.Ticks = append(v.Ticks, axisTick{X: n1(x(ns)), Label: mdfmt.Duration(float64(ns - tl.StartNS)), Anchor: anchor})
	}
	return v
}

// shade quantises a busy share to tenths, so neighbouring slices merge.
func shade(v float64) float64 {
	return float64(int(v*10+0.5)) / 10
}

var classColour = map[string]string{"COMP": colCompute, "COMM": colTransfer, "MEM": colOther}

// kernelChartView is the kernels with the most GPU time as bars.
type kernelChartView struct {
	Width, Height, LabelX, BarX, BarH n0
	Bars                              []kernelBar
}

type kernelBar struct {
	Short, Name, Colour, Time string
	Count                     int64
	Y, TextY, TimeX           n1
	W                         n2
}

func kernelChart(ks []report.KernelTime) *kernelChartView {
	if len(ks) == 0 {
		return nil
	}
	const width, label = 960.0, 420.0
	top := slices.MaxFunc(ks, func(a, b report.KernelTime) int {
		switch {
		case a.TotalNS < b.TotalNS:
			return -1
		case a.TotalNS > b.TotalNS:
			return 1
		}
		return 0
	}).TotalNS
	if top <= 0 {
		return nil
	}
	const barH = 16.0
	v := &kernelChartView{Width: width, Height: n0(6 + float64(len(ks))*(barH+4)), LabelX: label - 6, BarX: label, BarH: barH}
	scale := (width - label - 100) / top
	for i, k := range ks {
		y := 4 + float64(i)*(barH+4)
		col := classColour[k.Class]
		if col == "" {
			col = colCompute
		}
		v.Bars = append(v.Bars, kernelBar{Short: mdfmt.ShortKernel(k.Name), Name: k.Name, Colour: col, Time: mdfmt.Duration(k.TotalNS),
			Count: k.Count, Y: n1(y), TextY: n1(y + barH*0.75), W: n2(max(0.5, k.TotalNS*scale)), TimeX: n1(label + k.TotalNS*scale + 4)})
	}
	return v
}
