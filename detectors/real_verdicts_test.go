package detectors_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
)

// TraceLens' MI300 ResNet trace is one rank of eight: 63% of its step
// runs collectives alone. Its verdict named 2.6 ms of memory-bound work
// first and left the 11.9 ms of exposed communication to the step's
// breakdown; the communication now heads it, naming DDP's allreduce and
// saying that the other ranks were not traced.
func TestExposedCommOnRealTrace(t *testing.T) {
	st, res := analyzeDir(t, corpusDir("tracelens/tests__traces__mi300__resnet_act_checkpoint.json.gz")(t), "resnet", detectors.Window{})
	rep, err := detectors.BuildReport(context.Background(), st, res)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Causes) == 0 {
		t.Fatal("no root cause")
	}
	c := rep.Causes[0]
	if c.Kind != "comm_bound" || c.CostPct < 50 || !strings.Contains(c.Headline, "1 of 8 ranks traced") || c.Subject != "allreduce" {
		t.Fatalf("first cause %s (%.1f%%, %q): %s; want exposed communication in allreduce, over half the step, of 1 of 8 ranks", c.Kind, c.CostPct, c.Subject, c.Headline)
	}
	// its step's timeline draws the collectives it ran (no peer matches
	// them, so they are transfer, not waiting); it drew compute alone
	ch := rep.Charts("resnet")
	if ch == nil || ch.Timeline == nil || len(ch.Timeline.Lanes) != 1 {
		t.Fatalf("charts %+v, want a timeline of rank 0", ch)
	}
	var drawn int64
	for _, cb := range ch.Timeline.Lanes[0].Colls {
		if cb.WaitEndNS != cb.StartNS || cb.End <= cb.StartNS || cb.Name == "" {
			t.Errorf("collective bar %+v, want a named transfer with no wait", cb)
		}
		drawn += cb.End - cb.StartNS
	}
	if span := ch.Timeline.EndNS - ch.Timeline.StartNS; drawn < span/2 {
		t.Errorf("the timeline draws %d ns of collectives in a %d ns step, want over half of it", drawn, span)
	}
}

// sglang's decode capture (TraceLens, MI300X): 544 of its 546 launches are
// inside hipStreamBeginCapture..EndCapture and record a graph; two kernels
// ran. Its verdict named an 11 us fill_ kernel at 0% of its roofline; it
// now says the trace is a capture's.
func TestGraphCaptureOnRealTrace(t *testing.T) {
	st, res := analyzeDir(t, corpusDir("tracelens/tests__traces__inference__sglang_decode__capture_traces__bs_32_rank0.json.gz")(t), "sglang", detectors.Window{})
	rep, err := detectors.BuildReport(context.Background(), st, res)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Headline) != 1 || rep.Headline[0].Kind != "graph_capture" || !strings.Contains(rep.Headline[0].Text, "544 of its 546 kernel launches") {
		t.Fatalf("headlines %+v, want the capture's with its 544 of 546 launches", rep.Headline)
	}
}
