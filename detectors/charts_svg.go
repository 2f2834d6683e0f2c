package detectors

import (
	"fmt"
	"html"
	"slices"
	"strings"
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

// chartsHTML renders every run's charts as inline SVG (no script, no
// network): the page stays one self-contained file.
func (r *Report) chartsHTML() string {
	var b strings.Builder
	for _, run := range r.Runs {
		c := r.charts[run.RunID]
		if c == nil || len(c.Ranks) == 0 && c.Timeline == nil && len(c.Kernels) == 0 && c.Roofline == nil {
			continue
		}
		if len(r.Runs) > 1 {
			fmt.Fprintf(&b, "<h3>Run <code>%s</code></h3>\n", html.EscapeString(run.RunID))
		}
		if len(c.Ranks) > 0 {
			writeRankChart(&b, c)
		}
		if c.Timeline != nil {
			writeTimeline(&b, c.Timeline)
		}
		if len(c.Kernels) > 0 {
			writeKernelChart(&b, c.Kernels)
		}
		if c.Roofline != nil {
			writeRoofline(&b, c.Roofline)
		}
	}
	return b.String()
}

func legend(b *strings.Builder, items ...[2]string) {
	b.WriteString(`<div class="legend">`)
	for _, it := range items {
		fmt.Fprintf(b, `<span><i style="background:%s"></i>%s</span>`, it[0], html.EscapeString(it[1]))
	}
	b.WriteString("</div>\n")
}

// writeRankChart draws one stacked bar per rank: compute, transfer, wait,
// other and idle time, per step where the ranks have steps.
func writeRankChart(b *strings.Builder, c *Charts) {
	unit := "per step"
	if !c.PerStep {
		unit = "over the analysed window"
	}
	longest := 0.0
	for _, rt := range c.Ranks {
		longest = max(longest, rt.Compute+rt.Transfer+rt.Wait+rt.Other+rt.Idle)
	}
	if longest <= 0 {
		return
	}
	const width, label, right = 960.0, 70.0, 90.0
	barH := 18.0
	if len(c.Ranks) > 16 {
		barH = 9
	}
	h := 20 + float64(len(c.Ranks))*(barH+3)
	shown := ""
	if c.TotalRanks > len(c.Ranks) {
		shown = fmt.Sprintf("; %d of %d ranks shown: the root causes' ranks and their peers first, then those whose split differs most from the median rank's", len(c.Ranks), c.TotalRanks)
	}
	fmt.Fprintf(b, "<figure class=\"chart\" data-chart=\"rank-time\"><figcaption>GPU time of each rank %s: compute, collective transfer, waiting in a collective for a late member, other work (copies) and idle%s</figcaption>\n", unit, html.EscapeString(shown))
	legend(b, [2]string{colCompute, "compute"}, [2]string{colTransfer, "transfer"}, [2]string{colWait, "wait"},
		[2]string{colOther, "other"}, [2]string{colIdle, "idle"})
	fmt.Fprintf(b, `<svg viewBox="0 0 %.0f %.0f" width="100%%" role="img" aria-label="GPU time per rank">`, width, h)
	scale := (width - label - right) / longest
	for i, rt := range c.Ranks {
		y := 4 + float64(i)*(barH+3)
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" class="lbl" text-anchor="end">rank %d</text>`, label-6, y+barH*0.75, rt.Rank)
		x := label
		for _, part := range []struct {
			v    float64
			col  string
			name string
		}{{rt.Compute, colCompute, "compute"}, {rt.Transfer, colTransfer, "transfer"}, {rt.Wait, colWait, "wait"},
			{rt.Other, colOther, "other"}, {rt.Idle, colIdle, "idle"}} {
			if part.v <= 0 {
				continue
			}
			w := part.v * scale
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.2f" height="%.0f" fill="%s"><title>rank %d %s: %s</title></rect>`,
				x, y, w, barH, part.col, rt.Rank, part.name, Duration(part.v))
			x += w
		}
		total := rt.Compute + rt.Transfer + rt.Wait + rt.Other + rt.Idle
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="val">%s</text>`, x+4, y+barH*0.75, Duration(total))
	}
	b.WriteString("</svg></figure>\n")
}

// writeTimeline draws one lane per rank across the chosen step: compute
// density as shading, each collective as its wait (red) then transfer
// (teal), and a mark where a late member arrived and held the others up.
func writeTimeline(b *strings.Builder, tl *Timeline) {
	const width, label = 960.0, 70.0
	laneH := 16.0
	if len(tl.Lanes) > 16 {
		laneH = 10
	}
	span := float64(tl.EndNS - tl.StartNS)
	plotW := width - label - 10
	x := func(ns int64) float64 { return label + plotW*float64(ns-tl.StartNS)/span }
	h := 24 + float64(len(tl.Lanes))*(laneH+4)
	shown := ""
	if len(tl.Lanes) < tl.TotalRanks {
		shown = fmt.Sprintf("; %d of %d ranks shown: the root causes' and their peers' first", len(tl.Lanes), tl.TotalRanks)
	}
	fmt.Fprintf(b, "<figure class=\"chart\" data-chart=\"timeline\"><figcaption>Timeline of %s, %s long, clocks aligned on collective ends%s</figcaption>\n",
		html.EscapeString(tl.Why), Duration(span), shown)
	legend(b, [2]string{colCompute, "compute (shade: share busy)"}, [2]string{colWait, "collective: waiting"},
		[2]string{colTransfer, "collective: transfer"}, [2]string{colLate, "▼ late arrival that held the others up"})
	fmt.Fprintf(b, `<svg viewBox="0 0 %.0f %.0f" width="100%%" role="img" aria-label="per-rank timeline">`, width, h)
	bw := plotW / float64(tl.Buckets)
	var marks []string
	for i, l := range tl.Lanes {
		y := 4 + float64(i)*(laneH+4)
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" class="lbl" text-anchor="end">rank %d</text>`, label-6, y+laneH*0.75, l.Rank)
		fmt.Fprintf(b, `<rect x="%.0f" y="%.1f" width="%.0f" height="%.0f" fill="#f6f6f6"/>`, label, y, plotW, laneH)
		// runs of equal shade as one rect each
		for j := 0; j < len(l.Compute); {
			k := j
			q := shade(l.Compute[j])
			for k < len(l.Compute) && shade(l.Compute[k]) == q {
				k++
			}
			if q > 0 {
				fmt.Fprintf(b, `<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s" fill-opacity="%.1f"/>`,
					label+float64(j)*bw, y+laneH*0.5, float64(k-j)*bw, laneH*0.5, colCompute, q)
			}
			j = k
		}
		for _, c := range l.Colls {
			tip := fmt.Sprintf("rank %d %s: waited %s, transfer %s", l.Rank, c.Name, Duration(float64(c.WaitEndNS-c.StartNS)), Duration(float64(c.End-c.WaitEndNS)))
			if c.WaitEndNS > c.StartNS {
				fmt.Fprintf(b, `<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s"><title>%s</title></rect>`,
					x(c.StartNS), y, max(0.5, x(c.WaitEndNS)-x(c.StartNS)), laneH*0.5, colWait, html.EscapeString(tip))
			}
			if c.End > c.WaitEndNS {
				fmt.Fprintf(b, `<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s"><title>%s</title></rect>`,
					x(c.WaitEndNS), y, max(0.5, x(c.End)-x(c.WaitEndNS)), laneH*0.5, colTransfer, html.EscapeString(tip))
			}
			if c.Last {
				cx := x(c.StartNS)
				marks = append(marks, fmt.Sprintf(`<path d="M%.1f %.1f l-4 -6 h8 z" fill="%s" class="late"><title>rank %d arrived last at %s and held the others up %s</title></path>`,
					cx, y, colLate, l.Rank, html.EscapeString(c.Name), Duration(float64(c.BlockNS))))
				if float64(c.BlockNS) >= 0.01*span {
					marks = append(marks, fmt.Sprintf(`<line x1="%.1f" x2="%.1f" y1="4" y2="%.1f" stroke="%s" stroke-dasharray="2 3" stroke-width="0.8"/>`,
						cx, cx, h-20, colLate))
				}
			}
		}
	}
	for _, m := range marks {
		b.WriteString(m)
	}
	// time axis
	for i := 0; i <= 4; i++ {
		ns := tl.StartNS + int64(float64(i)*span/4)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="val" text-anchor="middle">%s</text>`, x(ns), h-6, Duration(float64(ns-tl.StartNS)))
	}
	b.WriteString("</svg></figure>\n")
}

// shade quantises a busy share to tenths, so neighbouring slices merge.
func shade(v float64) float64 {
	return float64(int(v*10+0.5)) / 10
}

// shortKernel is a kernel name without its return type, template and
// parameter lists, at most 60 characters (the tooltip has it in full).
func shortKernel(name string) string {
	n := strings.ReplaceAll(strings.TrimPrefix(name, "void "), "(anonymous namespace)::", "")
	if i := strings.IndexAny(n, "<("); i > 0 {
		n = n[:i]
	}
	if r := []rune(n); len(r) > 60 {
		n = string(r[:59]) + "…"
	}
	return n
}

var classColour = map[string]string{"COMP": colCompute, "COMM": colTransfer, "MEM": colOther}

// writeKernelChart draws the kernels with the most GPU time as bars.
func writeKernelChart(b *strings.Builder, ks []KernelTime) {
	const width, label = 960.0, 420.0
	top := slices.MaxFunc(ks, func(a, b KernelTime) int {
		switch {
		case a.TotalNS < b.TotalNS:
			return -1
		case a.TotalNS > b.TotalNS:
			return 1
		}
		return 0
	}).TotalNS
	if top <= 0 {
		return
	}
	barH := 16.0
	h := 6 + float64(len(ks))*(barH+4)
	b.WriteString("<figure class=\"chart\" data-chart=\"top-kernels\"><figcaption>Kernels with the most GPU time, all ranks together</figcaption>\n")
	legend(b, [2]string{colCompute, "compute"}, [2]string{colTransfer, "communication"}, [2]string{colOther, "memory"})
	fmt.Fprintf(b, `<svg viewBox="0 0 %.0f %.0f" width="100%%" role="img" aria-label="top kernels">`, width, h)
	scale := (width - label - 100) / top
	for i, k := range ks {
		y := 4 + float64(i)*(barH+4)
		name := shortKernel(k.Name)
		col := classColour[k.Class]
		if col == "" {
			col = colCompute
		}
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" class="lbl" text-anchor="end">%s</text>`, label-6, y+barH*0.75, html.EscapeString(name))
		fmt.Fprintf(b, `<rect x="%.0f" y="%.1f" width="%.2f" height="%.0f" fill="%s"><title>%s: %d calls, %s</title></rect>`,
			label, y, max(0.5, k.TotalNS*scale), barH, col, html.EscapeString(k.Name), k.Count, Duration(k.TotalNS))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="val">%s</text>`, label+k.TotalNS*scale+4, y+barH*0.75, Duration(k.TotalNS))
	}
	b.WriteString("</svg></figure>\n")
}
