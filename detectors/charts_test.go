package detectors_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/detectors/report/html"
)

// handReport is the hand run's report (see handRun: rank 1 reaches the
// all-reduce of each step 100 µs after rank 0).
func handReport(t *testing.T) *report.Report {
	t.Helper()
	st, res := analyzeDir(t, handRun(t), "hand", detectors.Window{}, lowThresholds)
	rep, err := detectors.BuildReport(context.Background(), st, res)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// The charts carry the hand run's timeline: per step, rank 0 waits in the
// all-reduce while no compute runs from 400 to 450 µs (K2 hides 350-400),
// both ranks then transfer for 150 µs, and rank 1 is marked as the late
// arrival that held rank 0 up for 100 µs.
func TestChartsOfHandRun(t *testing.T) {
	c := handReport(t).Charts("hand")
	if c == nil {
		t.Fatal("no charts for run hand")
	}
	if !c.PerStep || len(c.Ranks) != 2 {
		t.Fatalf("rank times %+v (per step %v), want 2 ranks per step", c.Ranks, c.PerStep)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1 }
	for _, rt := range c.Ranks {
		wantWait := 0.0
		if rt.Rank == 0 {
			wantWait = 50e3
		}
		if !near(rt.Wait, wantWait) || !near(rt.Transfer, 150e3) {
			t.Errorf("rank %d: wait %.0f transfer %.0f ns a step, want %.0f and 150000", rt.Rank, rt.Wait, rt.Transfer, wantWait)
		}
		if sum := rt.Compute + rt.Transfer + rt.Wait + rt.Other + rt.Idle; sum <= 0 {
			t.Errorf("rank %d: parts sum to %.0f", rt.Rank, sum)
		}
	}
	tl := c.Timeline
	if tl == nil || tl.Step == nil || len(tl.Lanes) != 2 {
		t.Fatalf("timeline %+v, want one step with 2 lanes", tl)
	}
	var late, waited bool
	for _, l := range tl.Lanes {
		for _, cb := range l.Colls {
			if cb.Last && l.Rank == 1 && cb.BlockNS == 100e3 {
				late = true
			}
			if l.Rank == 0 && cb.WaitEndNS-cb.StartNS == 100e3 {
				waited = true
			}
		}
		busy := 0.0
		for _, v := range l.Compute {
			busy += v
		}
		if busy == 0 {
			t.Errorf("rank %d lane shows no compute", l.Rank)
		}
	}
	if !late || !waited {
		t.Errorf("timeline: rank 1 marked late %v, rank 0 waiting 100 µs %v; lanes %+v", late, waited, tl.Lanes)
	}
	if len(c.Kernels) == 0 || c.Kernels[0].TotalNS <= 0 {
		t.Errorf("top kernels %+v", c.Kernels)
	}
}

// chromium is the headless browser the page test uses, or "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// The HTML report's charts draw in a real browser: chromium's DOM has the
// three figures with their shapes, nothing logs to the console, and the
// screenshot holds the charts' colours (compute blue, wait red).
func TestHTMLChartsInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium: install Debian's chromium to check the page in a browser")
	}
	var page bytes.Buffer
	if err := html.Write(&page, handReport(t)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	browse := func(args ...string) (string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--headless", "--no-sandbox", "--disable-gpu",
			"--hide-scrollbars", "--user-data-dir=" + filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0"}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", bin, err, errOut.String())
		}
		return out.String(), errOut.String()
	}
	dom, logs := browse("--dump-dom", "file://"+file)
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("browser console: %s", line)
		}
	}
	for _, chart := range []string{"rank-time", "timeline", "top-kernels"} {
		re := regexp.MustCompile(`(?s)<figure class="chart" data-chart="` + chart + `">(.*?)</figure>`)
		m := re.FindStringSubmatch(dom)
		if m == nil {
			t.Errorf("chart %s missing from the rendered DOM", chart)
			continue
		}
		if n := strings.Count(m[1], "<rect"); n < 2 {
			t.Errorf("chart %s has %d shapes", chart, n)
		}
	}
	shot := filepath.Join(dir, "shot.png")
	browse("--window-size=1280,1400", "--screenshot="+shot, "file://"+file)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	blue, red := countColour(img, 0x4c, 0x78, 0xa8), countColour(img, 0xe4, 0x57, 0x56)
	if blue < 500 || red < 50 {
		t.Errorf("screenshot: %d compute-blue and %d wait-red pixels; the charts did not draw", blue, red)
	}
}

// countColour counts the pixels within a few levels of an RGB colour.
func countColour(img image.Image, r, g, b uint8) int {
	n := 0
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near8(pr>>8, r) && near8(pg>>8, g) && near8(pb>>8, b) {
				n++
			}
		}
	}
	return n
}

func near8(v uint32, want uint8) bool { return int(v)-int(want) <= 3 && int(want)-int(v) <= 3 }
