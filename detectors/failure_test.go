package detectors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/report"
)

// A detector whose query fails (here: DuckDB's error(), and a finding with
// a NULL message, which the findings table refuses) is a line in the
// report, not the end of the analysis: every other detector's metrics and
// findings still come out.
func TestFailingDetectorIsALineNotTheEnd(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name+".sql"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("zz_raises", `-- name: zz_raises
-- category: utilization
-- kind: metric
-- description: a metric detector whose query raises
SELECT run_id, rank, error('boom from zz_raises')::DOUBLE AS x FROM ranks
`)
	write("zz_null_message", `-- name: zz_null_message
-- category: utilization
-- kind: finding
-- severity: warn
-- description: a finding detector that returns a NULL message
SELECT run_id, rank, 'm' AS metric, 1.0 AS value, NULL::VARCHAR AS message FROM ranks
`)
	base, baseRes := analyzeDir(t, handRun(t), "hand", detectors.Window{}, lowThresholds)
	cfg := lowThresholds
	cfg.Dirs = []string{dir}
	st, res := analyzeDir(t, handRun(t), "hand", detectors.Window{}, cfg)

	failed := detectors.Failures(res)
	if len(failed) != 2 {
		t.Fatalf("failures %+v, want zz_raises and zz_null_message", failed)
	}
	for _, f := range failed {
		if !strings.Contains(f.Error, "detector "+f.Detector+" (") {
			t.Errorf("failure of %s does not name its file: %s", f.Detector, f.Error)
		}
	}
	if !strings.Contains(failed[0].Error+failed[1].Error, "boom from zz_raises") {
		t.Errorf("the raised message is lost: %+v", failed)
	}
	// everything else is what a run without the broken detectors gives
	ctx := context.Background()
	count := func(q string) (n int) {
		t.Helper()
		if err := st.Conn().QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var wantFindings, wantMetrics int
	base.Conn().QueryRowContext(ctx, "SELECT count(*) FROM findings").Scan(&wantFindings)
	base.Conn().QueryRowContext(ctx, "SELECT count(*) FROM metrics").Scan(&wantMetrics)
	if wantFindings == 0 || wantMetrics == 0 {
		t.Fatalf("the base run has %d findings and %d metrics; the test needs some", wantFindings, wantMetrics)
	}
	if got := count("SELECT count(*) FROM findings"); got != wantFindings {
		t.Errorf("%d findings, want %d as without the broken detectors", got, wantFindings)
	}
	if got := count("SELECT count(*) FROM metrics"); got != wantMetrics {
		t.Errorf("%d metrics, want %d as without the broken detectors", got, wantMetrics)
	}
	if len(res) != len(baseRes)+2 {
		t.Errorf("%d results, want %d", len(res), len(baseRes)+2)
	}

	rep, err := detectors.BuildReport(ctx, st, res)
	if err != nil {
		t.Fatal(err)
	}
	var md, js bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Detectors that failed", "- `zz_raises` (metric): detector zz_raises (", "- `zz_null_message` (finding): "} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, head(md.String(), 30))
		}
	}
	for _, m := range rep.Metrics {
		if m.Detector == "zz_raises" {
			t.Errorf("a failed metric detector got a table")
		}
	}
	var doc struct {
		Failures []report.DetectorFailure `json:"detector_failures"`
		Findings []report.Finding         `json:"findings"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Failures) != 2 || len(doc.Findings) != wantFindings {
		t.Errorf("JSON report: %d failures, %d findings; want 2 and %d", len(doc.Failures), len(doc.Findings), wantFindings)
	}
}

// A cancelled analysis still stops: only a detector's own failure is
// passed over.
func TestCancelledRunStops(t *testing.T) {
	st, _ := analyzeDir(t, handRun(t), "hand", detectors.Window{})
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := set.Run(ctx, st); err == nil {
		t.Fatal("a cancelled run returned no error")
	}
}

func head(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
