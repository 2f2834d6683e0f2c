package detectors

import (
	"slices"
	"testing"

	"github.com/trainscope/trainscope/detectors/report"
)

// With more ranks than the chart holds, the root cause's rank and its
// waiters come first, then the ranks whose split is furthest from the
// median's; the rest are left out, and the bars stay in rank order.
func TestPickRankBars(t *testing.T) {
	var all []report.RankTime
	for r := range 100 {
		rt := report.RankTime{Rank: r, Compute: 10, Transfer: 3, Wait: 2, Idle: 1}
		switch r {
		case 40: // odd: mostly idle
			rt.Idle = 12
		case 77: // odd: mostly waiting
			rt.Wait = 9
		}
		all = append(all, rt)
	}
	ninety := 90
	r := &chartSource{Report: &report.Report{Causes: []report.Cause{{RunID: "x", Rank: &ninety, Waiters: []report.Waiter{{Rank: 91}, {Rank: 3}, {Rank: 60}, {Rank: 61}}}}}}
	got := r.pickRankBars("x", all, 6)
	var ranks []int
	for _, rt := range got {
		ranks = append(ranks, rt.Rank)
	}
	// 90 and its first three waiters, then the two odd ranks
	if want := []int{3, 40, 60, 77, 90, 91}; !slices.Equal(ranks, want) {
		t.Errorf("ranks %v, want %v", ranks, want)
	}
	if got := r.pickRankBars("x", all[:5], 6); len(got) != 5 {
		t.Errorf("a run under the cap lost ranks: %d", len(got))
	}
}
