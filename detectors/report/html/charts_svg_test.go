package html

import (
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors/report"
)

// chartsReport is a report of runs with the given charts and no findings.
func chartsReport(charts map[string]*report.Charts, runs ...string) *report.Report {
	r := &report.Report{}
	for id, c := range charts {
		r.SetCharts(id, c)
	}
	for _, id := range runs {
		r.Runs = append(r.Runs, report.RunInfo{RunID: id, Ranks: []int{0, 1}, WorldSize: 2})
	}
	return r
}

// Each chart draws where its layout puts it: the coordinates below are
// worked by hand from the chart's geometry (960 wide, labels on the left)
// and the data; names from the trace are escaped in labels and tooltips.
func TestChartsSVG(t *testing.T) {
	cases := []struct {
		name   string
		charts report.Charts
		want   []string
		count  map[string]int // how many times each string appears
	}{
		{
			name: "rank time",
			// longest bar 20 us over 800 px (960 less 70 of labels and 90 of values): 0.04 px/ns
			charts: report.Charts{PerStep: true, TotalRanks: 5, Ranks: []report.RankTime{{Rank: 0, Compute: 10e3, Idle: 10e3}, {Rank: 1, Compute: 5e3, Wait: 5e3}}},
			want: []string{`<svg viewBox="0 0 960 62" width="100%" role="img" aria-label="GPU time per rank">`,
				"GPU time of each rank per step: ", "; 2 of 5 ranks shown: the root causes&#39; ranks",
				`<text x="64" y="17.5" class="lbl" text-anchor="end">rank 0</text>`,
				`<rect x="70.0" y="4.0" width="400.00" height="18" fill="#4c78a8"><title>rank 0 compute: 10.0 us</title></rect>`,
				`<rect x="470.0" y="4.0" width="400.00" height="18" fill="#d4d4d4"><title>rank 0 idle: 10.0 us</title></rect>`,
				`<text x="874.0" y="17.5" class="val">20.0 us</text>`,
				`<rect x="270.0" y="25.0" width="200.00" height="18" fill="#e45756"><title>rank 1 wait: 5.0 us</title></rect>`,
				`<text x="474.0" y="38.5" class="val">10.0 us</text>`},
		},
		{
			name: "timeline",
			// 1000 ns over 880 px from x=70; 4 slices of 220 px
			charts: report.Charts{Timeline: &report.Timeline{Why: "step 3, <why>", StartNS: 0, EndNS: 1000, Buckets: 4, TotalRanks: 4, Lanes: []report.Lane{
				{Rank: 0, Compute: []float64{1, 1, 0, 0.44}, Colls: []report.CollBar{{Name: "allreduce", StartNS: 500, WaitEndNS: 600, End: 800}}},
				{Rank: 1, Compute: []float64{0, 0, 0, 0}, Colls: []report.CollBar{{Name: "ar<x>", StartNS: 600, WaitEndNS: 600, End: 800, Last: true, BlockNS: 100}}},
			}}},
			want: []string{`<svg viewBox="0 0 960 64" width="100%" role="img" aria-label="per-rank timeline">`,
				"Timeline of step 3, &lt;why&gt;, 1.0 us long, clocks aligned on collective ends; 2 of 4 ranks shown",
				`<text x="64" y="16.0" class="lbl" text-anchor="end">rank 0</text><rect x="70" y="4.0" width="880" height="16" fill="#f6f6f6"/>`,
				`<rect x="70.00" y="12.0" width="440.00" height="8.0" fill="#4c78a8" fill-opacity="1.0"/>`,
				`<rect x="730.00" y="12.0" width="220.00" height="8.0" fill="#4c78a8" fill-opacity="0.4"/>`,
				`<rect x="510.00" y="4.0" width="88.00" height="8.0" fill="#e45756"><title>rank 0 allreduce: waited 100 ns, transfer 200 ns</title></rect>`,
				`<rect x="598.00" y="4.0" width="176.00" height="8.0" fill="#72b7b2">`,
				`<rect x="598.00" y="24.0" width="176.00" height="8.0" fill="#72b7b2"><title>rank 1 ar&lt;x&gt;: waited 0 ns, transfer 200 ns</title></rect>`,
				`<path d="M598.0 24.0 l-4 -6 h8 z" fill="#b71c1c" class="late"><title>rank 1 arrived last at ar&lt;x&gt; and held the others up 100 ns</title></path>`,
				`<line x1="598.0" x2="598.0" y1="4" y2="44.0" stroke="#b71c1c" stroke-dasharray="2 3" stroke-width="0.8"/>`,
				`<text x="70.0" y="58.0" class="val" text-anchor="middle">0 ns</text>`,
				`<text x="290.0" y="58.0" class="val" text-anchor="middle">250 ns</text>`,
				// the last label ends at the plot's right edge, inside the drawing
				`<text x="950.0" y="58.0" class="val" text-anchor="end">1.0 us</text>`},
			// rank 1 did not wait: no wait rect; one late arrival
			count: map[string]int{`fill="#e45756"><title>`: 1, `class="late"`: 1, "<line ": 1, `fill-opacity=`: 2},
		},
		{
			name: "top kernels",
			// the longest over 440 px from x=420
			charts: report.Charts{Kernels: []report.KernelTime{
				{Name: "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)", Class: "COMP", Count: 3, TotalNS: 2e6},
				{Name: "ncclKernel_AllReduce", Class: "COMM", Count: 1, TotalNS: 1e6}}},
			want: []string{`<svg viewBox="0 0 960 46" width="100%" role="img" aria-label="top kernels">`,
				`<text x="414" y="16.0" class="lbl" text-anchor="end">at::native::vectorized_elementwise_kernel</text>`,
				`<rect x="420" y="4.0" width="440.00" height="16" fill="#4c78a8"><title>void at::native::vectorized_elementwise_kernel&lt;4, at::native::FillFunctor&lt;float&gt;&gt;(int): 3 calls, 2.000 ms</title></rect><text x="864.0" y="16.0" class="val">2.000 ms</text>`,
				`<rect x="420" y="24.0" width="220.00" height="16" fill="#72b7b2"><title>ncclKernel_AllReduce: 1 calls, 1.000 ms</title></rect>`},
		},
		{
			name: "roofline",
			// decades 0.01-10^4 FLOP/B over x 64-850, 0.01-10^4 TFLOP/s over y 340-12
			charts: report.Charts{Roofline: &report.RooflineChart{GPU: "H100-SXM", BWTBs: 3.35, Peaks: map[string]float64{"bf16": 989.4}, Skipped: 2, Points: []report.RoofPoint{
				{Label: "aten::mm bf16", Bound: "compute", Intensity: 1000, TFLOPS: 500, RoofPct: 50.4, TimeNS: 1e6, SavedNS: 5e5},
				{Label: "add<x>", Bound: "memory", Intensity: 0.1, TFLOPS: 0.3, RoofPct: 90, TimeNS: 2.5e5}}}},
			want: []string{`<svg viewBox="0 0 960 380" width="100%" role="img" aria-label="roofline">`,
				"Roofline on H100-SXM: each unique operator call's achieved TFLOP/s", "with the HBM roof (3.35 TB/s)",
				`<line x1="64.0" y1="12" x2="64.0" y2="340" stroke="#eee"/><text x="64.0" y="354" text-anchor="middle" class="val">0.01</text>`,
				`<line x1="64" y1="12.0" x2="850" y2="12.0" stroke="#eee"/><text x="60" y="16.0" text-anchor="end" class="val">10000</text>`,
				`<text x="457" y="374" text-anchor="middle">FLOP per byte of device memory traffic</text>`,
				`<text x="12" y="176" transform="rotate(-90 12 176)" text-anchor="middle">TFLOP/s</text>`,
				`<polyline fill="none" stroke="#333" stroke-width="1.5" points="64.0,311.3 649.6,66.9 850.0,66.9"/><text x="854" y="70.9">BF16 989</text>`,
				`<circle cx="719.0" cy="83.1" r="12.0" fill="#4c78a8" fill-opacity="0.7" stroke="#222" stroke-width="0.5"><title>aten::mm bf16: 1000.00 FLOP/B, 500.00 TFLOP/s, 50% of its roofline, 1.000 ms of GPU time, 500.0 us less at the roofline (compute-bound)</title></circle>`,
				`<circle cx="195.0" cy="259.3" r="7.5" fill="#eeca3b"`, "<title>add&lt;x&gt;: 0.10 FLOP/B",
				`</svg><p class="note">2 unique call(s) with no floating-point work`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var page strings.Builder
			if err := Write(&page, chartsReport(map[string]*report.Charts{"r": &c.charts}, "r")); err != nil {
				t.Fatal(err)
			}
			for _, want := range c.want {
				if !strings.Contains(page.String(), want) {
					t.Errorf("page lacks %s", want)
				}
			}
			for str, n := range c.count {
				if got := strings.Count(page.String(), str); got != n {
					t.Errorf("page holds %s %d times, want %d", str, got, n)
				}
			}
			if t.Failed() {
				t.Logf("charts:\n%s", section(page.String(), `<h2 id="charts">`, "</main>"))
			}
		})
	}
}

// The charts come after the verdict, in the page and in its contents; a
// page of several runs heads each run's charts with its id, and a run
// with nothing to draw gets no heading.
func TestChartsSection(t *testing.T) {
	kernels := &report.Charts{Kernels: []report.KernelTime{{Name: "k", TotalNS: 1}}}
	var page strings.Builder
	r := chartsReport(map[string]*report.Charts{"a<b>": kernels, "c": kernels, "empty": {}}, "a<b>", "empty", "c")
	if err := Write(&page, r); err != nil {
		t.Fatal(err)
	}
	p := page.String()
	order := []string{`<a href="#verdict">Verdict</a>`, `<a href="#charts">Charts</a>`, `<h2 id="verdict">`, `<h2 id="charts">Charts</h2>`,
		"<h3>Run <code>a&lt;b&gt;</code></h3>", "<h3>Run <code>c</code></h3>", "</main>"}
	at := 0
	for _, s := range order {
		i := strings.Index(p[at:], s)
		if i < 0 {
			t.Fatalf("page lacks %s after byte %d:\n%s", s, at, p)
		}
		at += i
	}
	if strings.Count(p, "<h2 ") < 3 || !strings.Contains(section(p, `<h2 id="charts">`, "</main>"), "<h2 ") {
		t.Errorf("the charts are not between the verdict and the next section:\n%s", p)
	}
	if strings.Contains(section(p, `<h2 id="charts">`, "</main>"), "<code>empty</code>") {
		t.Errorf("a run without charts has a heading in the charts section")
	}
	// no charts: no section
	if p := Page("# r\n\n## Verdict\n\n## Next\n"); strings.Contains(p, "charts") {
		t.Errorf("a page without charts has a charts section:\n%s", p)
	}
}

// section is s from the first from up to the next to (or the end).
func section(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}
