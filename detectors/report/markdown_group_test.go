package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// A detector firing on many ranks is one grouped entry: its ranks as
// ranges, the spread of its value and the three largest in full.
func TestFindingsGroupedAcrossRanks(t *testing.T) {
	// the hang detector's header puts its findings in the Hangs section
	r := Report{Roles: map[string]Role{"hang": {Category: "reliability", Cause: KindHang}}}
	for i := range 10 {
		rank, v, th := int64(i), float64(i+1)/10, 0.2
		r.Findings = append(r.Findings, Finding{RunID: "x", Detector: "gpu_idle", Category: "utilization", Severity: "critical",
			Rank: &rank, Metric: "gpu_idle_ratio", Value: &v, Threshold: &th, Message: fmt.Sprintf("rank %d idles %.0f%%", i, 100*v)})
	}
	one, v := int64(3), 0.5
	r.Findings = append(r.Findings, Finding{RunID: "x", Detector: "hang", Category: "reliability", Severity: "critical",
		Rank: &one, Metric: "stall_ns", Value: &v, Message: "rank 3 stopped"})
	var b, full bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMarkdownFull(&full); err != nil {
		t.Fatal(err)
	}
	// one screen: one line per detector, ranks as ranges, the worst message
	brief := b.String()
	for _, want := range []string{
		"- [critical] gpu_idle on ranks 0-9 (gpu_idle_ratio 0.10 to 1): rank 9 idles 100%\n",
		"### Hangs\n\n- [critical] hang on rank 3 (stall_ns 0.50): rank 3 stopped\n",
	} {
		if !strings.Contains(brief, want) {
			t.Errorf("report lacks %q:\n%s", want, brief)
		}
	}
	if strings.Contains(brief, "rank 8 idles") {
		t.Errorf("the one-screen report wrote out more than the worst finding of a group")
	}
	// the appendix: grouped, the spread and the three largest in full
	md := full.String()
	for _, want := range []string{
		"##### [CRITICAL] gpu_idle — 10 findings on 10 ranks (0-9)",
		"- gpu_idle_ratio: min 0.10, median 0.60, max 1 (threshold 0.20)",
		"  - rank 9 idles 100%\n  - rank 8 idles 90%\n  - rank 7 idles 80%\n",
		"#### Hangs\n\n##### [CRITICAL] hang — rank 3", // a single finding stays as it is
	} {
		if !strings.Contains(md, want) {
			t.Errorf("full report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "rank 0 idles") {
		t.Errorf("a finding beyond the three largest was written out")
	}
}

func TestCompactBecause(t *testing.T) {
	got := compactBecause([]string{"gpu_idle (rank 0)", "gpu_idle (rank 1)", "gpu_idle (rank 2)", "gpu_idle (rank 5)",
		"bottleneck_class", "hang (rank 7)"})
	if want := "gpu_idle (ranks 0-2, 5), bottleneck_class, hang (rank 7)"; got != want {
		t.Errorf("compactBecause = %q, want %q", got, want)
	}
}
