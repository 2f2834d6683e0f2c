package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainscope/trainscope/detectors/live"
)

type reports map[string]*live.Report

func (r reports) Report(run string) *live.Report { return r[run] }
func (r reports) List() []*live.Report {
	var out []*live.Report
	for _, k := range []string{"a", "old"} {
		if rr := r[k]; rr != nil {
			out = append(out, rr)
		}
	}
	return out
}

func serve(t *testing.T, a *API, token string) *httptest.Server {
	t.Helper()
	h, err := a.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(RequireToken(token, h))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url, token string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, r.Header, string(b)
}

func TestRoutes(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	rs := reports{
		"a":   {Run: "a", At: at, Findings: 2, MD: []byte("# Run a\n"), JSON: []byte(`{"run":"a"}`), HTML: []byte("<html>a</html>")},
		"old": {Run: "old", At: at, MD: []byte("# Old run\n\nkept by an older build\n"), JSON: []byte(`{}`)},
	}
	hits := prometheus.NewCounter(prometheus.CounterOpts{Name: "trainscope_test_hits_total", Help: "test"})
	hits.Add(3)
	a := &API{Version: "v9", Reports: rs, Collectors: []prometheus.Collector{hits},
		Info: func() map[string]any { return map[string]any{"batches": 7} }}
	base := serve(t, a, "").URL
	for _, c := range []struct {
		path, contentType, body string
		code                    int
	}{
		{"/", "text/plain", "trainscope v9", 200},
		{"/", "text/plain", "Flight SQL: off", 200},
		{"/runs/a/report", "text/markdown", "# Run a", 200},
		{"/runs/a/report.json", "application/json", `{"run":"a"}`, 200},
		{"/runs/a/report.html", "text/html", "<html>a</html>", 200},
		{"/runs/old/report.html", "text/html", "kept by an older build", 200}, // rendered from its markdown
		{"/runs/nope/report", "text/plain", `no report for run "nope" yet (runs with reports: GET /runs)`, 404},
		{"/metrics", "text/plain", "trainscope_test_hits_total 3", 200},
		{"/metrics", "text/plain", "go_goroutines", 200},
		{"/healthz", "application/json", `"status":"ok"`, 200},
		{"/healthz", "application/json", `"batches":7`, 200},
	} {
		code, h, body := get(t, base+c.path, "")
		if code != c.code || !strings.HasPrefix(h.Get("Content-Type"), c.contentType) || !strings.Contains(body, c.body) {
			t.Errorf("GET %s: %d %s %q; want %d %s containing %q", c.path, code, h.Get("Content-Type"), body, c.code, c.contentType, c.body)
		}
	}
	if _, h, _ := get(t, base+"/runs/a/report", ""); h.Get("Last-Modified") != at.Format(http.TimeFormat) {
		t.Errorf("Last-Modified %q", h.Get("Last-Modified"))
	}
	_, _, body := get(t, base+"/runs", "")
	var listed []map[string]any
	if err := json.Unmarshal([]byte(body), &listed); err != nil || len(listed) != 2 || listed[0]["run_id"] != "a" || listed[0]["findings"] != 2.0 {
		t.Errorf("/runs: %s (%v)", body, err)
	}
	if strings.Contains(body, "kept by") {
		t.Errorf("/runs carries the reports themselves: %s", body)
	}
}

func TestHealthzUnwell(t *testing.T) {
	a := &API{Reports: reports{}, Health: func(context.Context) (string, bool) { return "ingest stalled: 4 messages wait", false }}
	code, _, body := get(t, serve(t, a, "").URL+"/healthz", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"status":"ingest stalled: 4 messages wait"`) {
		t.Errorf("/healthz: %d %s", code, body)
	}
}

func TestRequireToken(t *testing.T) {
	base := serve(t, &API{Reports: reports{}}, "s3cret").URL
	for _, c := range []struct {
		path, token string
		code        int
	}{
		{"/runs", "", 401},
		{"/runs", "wrong", 401},
		{"/metrics", "", 401},
		{"/runs", "s3cret", 200},
		{"/healthz", "", 200}, // probes need no token
	} {
		code, h, _ := get(t, base+c.path, c.token)
		if code != c.code {
			t.Errorf("GET %s with token %q: %d, want %d", c.path, c.token, code, c.code)
		}
		if code == 401 && !strings.Contains(h.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("a 401 without WWW-Authenticate")
		}
	}
}

// Two collectors with one name are refused when the handler is made, not
// at the first scrape.
func TestDuplicateMetric(t *testing.T) {
	c := func() prometheus.Collector {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "trainscope_twice_total", Help: "x"})
	}
	if _, err := (&API{Collectors: []prometheus.Collector{c(), c()}}).Handler(); err == nil {
		t.Error("no error for a metric registered twice")
	}
}
