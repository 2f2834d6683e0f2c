package httpapi

import (
	"testing"
	"time"

	"github.com/trainscope/trainscope/detectors/live"
)

// Runs whose ids differ only in punctuation are two runs to the API: each
// URL, its id's '/' escaped as %2F, gets its own run's report.
func TestReportsOfPunctuationRuns(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	rs := reports{}
	for _, run := range []string{"x/y", "x_y", "exp.1", "exp_1", "a b", "50%"} {
		rs[run] = &live.Report{Run: run, At: at, MD: []byte("# Run " + run + "\n"), JSON: []byte(`{}`)}
	}
	base := serve(t, &API{Reports: rs}, "").URL
	for path, want := range map[string]string{
		"/runs/x%2Fy/report": "# Run x/y\n", "/runs/x_y/report": "# Run x_y\n",
		"/runs/exp.1/report": "# Run exp.1\n", "/runs/exp_1/report": "# Run exp_1\n",
		"/runs/a%20b/report": "# Run a b\n", "/runs/50%25/report": "# Run 50%\n",
	} {
		if code, _, body := get(t, base+path, ""); code != 200 || body != want {
			t.Errorf("GET %s: %d %q, want %q", path, code, body, want)
		}
	}
	// a '/' not escaped is a path of more segments: no run of that id
	if code, _, _ := get(t, base+"/runs/x/y/report", ""); code != 404 {
		t.Errorf("GET /runs/x/y/report: %d, want 404", code)
	}
}
