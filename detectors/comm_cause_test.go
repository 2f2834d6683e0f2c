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
}
