package detectors_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/report"
)

// The cause graph's thresholds come from the set's config: a run whose
// late rank costs 0.4% of a step is balanced under the defaults; once
// causes.min_cost_pct (with min_cost_ns and min_cost_z) lets so small a
// cost count, that rank is a root cause and the verdict names the
// costliest cause instead (here the launch overhead, 2.5% a step).
func TestCausesConfigChangesTheVerdict(t *testing.T) {
	dir := gemmRun(t, []string{"n0", "n1", "n2", "n3"}, []int64{300, 300, 300, 306}, true)
	reportWith := func(cfg detectors.Config) *report.Report {
		st, res := analyzeDir(t, dir, "balanced", detectors.Window{}, cfg)
		rep, err := detectors.BuildReport(context.Background(), st, res)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	lateRank3 := func(rep *report.Report) bool {
		for _, c := range rep.Causes {
			if c.Kind == "late_rank" && c.Rank != nil && *c.Rank == 3 {
				return true
			}
		}
		return false
	}
	if rep := reportWith(detectors.Config{}); !rep.Headline[0].Balanced || lateRank3(rep) {
		t.Fatalf("default verdict %q, want balanced, rank 3 no cause", rep.Headline[0].Text)
	}
	low := detectors.DefaultCauses()
	low.MinCostPct, low.MinCostNS, low.MinCostZ = 0.1, 1000, 0.5
	if rep := reportWith(detectors.Config{Causes: low}); rep.Headline[0].Balanced || rep.Headline[0].Kind == "none" || !lateRank3(rep) {
		t.Errorf("verdict with %+v: %q (%s), want a cause, rank 3 late among them", low, rep.Headline[0].Text, rep.Headline[0].Kind)
	}
}

func TestCausesConfigValidate(t *testing.T) {
	if err := detectors.DefaultCauses().Validate("causes"); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
	bad := detectors.CausesConfig{MinCostPct: -1, MinCostNS: -5, MinCostZ: 3, OneOffShare: 0, OneOffNS: 1}
	err := bad.Validate("causes")
	for _, want := range []string{"causes.min_cost_pct: -1", "causes.min_cost_ns: -5", "causes.one_off_share: 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to name %q", err, want)
		}
	}
}
