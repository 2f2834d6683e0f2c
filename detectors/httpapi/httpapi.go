package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/trainscope/trainscope/detectors/report/html"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/trainscope/trainscope/detectors/live"
)

// Reports is where the API finds reports: the scheduler.
type Reports interface {
	// Report is the latest report of run, or nil.
	Report(run string) *live.Report
	// List is the latest report of every run.
	List() []*live.Report
}

// API is the HTTP API of one server.
type API struct {
	// Version is the build's version, shown on /.
	Version string
	// FlightAddr is the Flight SQL address shown on /, "" when off.
	FlightAddr string
	Reports    Reports
	// Health says whether the server works ("ok", or what is wrong).
	Health func(ctx context.Context) (status string, ok bool)
	// Info adds fields to /healthz's JSON (addresses, uptime, counts).
	Info func() map[string]any
	// Collectors are exposed on /metrics beside Go runtime and process
	// metrics.
	Collectors []prometheus.Collector
	// Routes are more routes, mounted beside this handler by the server
	// (e.g. "POST /runs/{id}/trigger  (on-demand capture)"), listed on /.
	Routes []string
}

// Handler routes the API. It fails when two collectors export one name.
func (a *API) Handler() (http.Handler, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	for _, c := range a.Collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	flight := a.FlightAddr
	if flight == "" {
		flight = "off"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		extra := ""
		for _, r := range a.Routes {
			extra += r + "\n"
		}
		fmt.Fprintf(w, "trainscope %s\n\n/healthz\n/metrics\n/runs\n/runs/{id}/report      (markdown)\n/runs/{id}/report.json\n/runs/{id}/report.html\n%s\nFlight SQL: %s\n", a.Version, extra, flight)
	})
	mux.HandleFunc("GET /healthz", a.healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /runs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(a.Reports.List())
	})
	for suffix, format := range map[string]string{"": "md", ".json": "json", ".html": "html"} {
		mux.HandleFunc("GET /runs/{id}/report"+suffix, func(w http.ResponseWriter, r *http.Request) {
			a.report(w, r.PathValue("id"), format)
		})
	}
	return mux, nil
}

func (a *API) report(w http.ResponseWriter, run, format string) {
	rr := a.Reports.Report(run)
	if rr == nil {
		http.Error(w, fmt.Sprintf("no report for run %q yet (runs with reports: GET /runs)", run), http.StatusNotFound)
		return
	}
	w.Header().Set("Last-Modified", rr.At.Format(http.TimeFormat))
	switch format {
	case "json":
		w.Header().Set("Content-Type", "application/json")
		w.Write(rr.JSON)
	case "html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if len(rr.HTML) == 0 { // a report kept by a build before HTML pages were
			io.WriteString(w, html.Page(string(rr.MD)))
			return
		}
		w.Write(rr.HTML)
	default:
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Write(rr.MD)
	}
}

func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	status, ok := "ok", true
	if a.Health != nil {
		status, ok = a.Health(r.Context())
	}
	body := map[string]any{}
	if a.Info != nil {
		body = a.Info()
	}
	body["status"] = status
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(body)
}

// RequireToken lets a request through when it carries the bearer token;
// /healthz stays open for probes (it tells nothing about the runs). An
// empty token lets everything through.
func RequireToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="trainscope"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <serve.auth token>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
