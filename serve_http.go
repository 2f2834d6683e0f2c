package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/detectors"
)

// routes: /healthz, /metrics (Prometheus text), /runs, /runs/{id}/report
// (markdown, .json, .html).
func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "trainscope %s\n\n/healthz\n/metrics\n/runs\n/runs/{id}/report      (markdown)\n/runs/{id}/report.json\n/runs/{id}/report.html\n\nFlight SQL: %s\n", version, orOff(s.flightAddr))
	})
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.HandleFunc("GET /runs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(s.sched.list())
	})
	mux.HandleFunc("GET /runs/{id}/report", func(w http.ResponseWriter, r *http.Request) { s.report(w, r, r.PathValue("id"), "md") })
	mux.HandleFunc("GET /runs/{id}/report.json", func(w http.ResponseWriter, r *http.Request) { s.report(w, r, r.PathValue("id"), "json") })
	mux.HandleFunc("GET /runs/{id}/report.html", func(w http.ResponseWriter, r *http.Request) { s.report(w, r, r.PathValue("id"), "html") })
	return mux
}

func (s *server) report(w http.ResponseWriter, _ *http.Request, run, format string) {
	rr := s.sched.report(run)
	if rr == nil {
		http.Error(w, fmt.Sprintf("no report for run %q yet (runs with reports: GET /runs)", run), http.StatusNotFound)
		return
	}
	w.Header().Set("Last-Modified", rr.At.Format(http.TimeFormat))
	switch format {
	case "json":
		w.Header().Set("Content-Type", "application/json")
		w.Write(rr.json)
		return
	case "html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if len(rr.html) == 0 { // a report kept by a build before HTML pages were
			io.WriteString(w, detectors.HTMLPage(string(rr.md)))
			return
		}
		w.Write(rr.html)
		return
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Write(rr.md)
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	status, code := "ok", http.StatusOK
	bad := func(msg string) { status, code = msg, http.StatusServiceUnavailable }
	pending, acks, lagErr := s.lag(r.Context())
	waiting := pending + uint64(max(acks, 0))
	idle := time.Since(s.started) // since the last commit, or the start
	if ns := s.stats.LastCommit.Load(); ns > 0 {
		idle = time.Since(time.Unix(0, ns))
	}
	switch since, lastErr, failing := s.stats.Failing(); {
	case !s.nc.IsConnected():
		bad("nats disconnected: " + s.nc.Status().String())
	case errors.Is(lagErr, jetstream.ErrConsumerNotFound):
		bad(fmt.Sprintf("ingest consumer %s is missing (deleted?): nothing is ingested until it is made again, which the ingestor does on its next fetch", s.durable))
	case lagErr != nil:
		bad("ingest consumer cannot be asked for its state: " + lagErr.Error())
	case failing && time.Since(since) >= ingestFailingAfter:
		bad(fmt.Sprintf("ingest failing for %s: %s", time.Since(since).Round(time.Second), lastErr))
	case waiting > 0 && idle >= ingestStalledAfter:
		bad(fmt.Sprintf("ingest stalled: %d messages wait and nothing was committed for %s", waiting, idle.Round(time.Second)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{
		"status": status, "nats": s.natsURL, "flight_sql": s.flightAddr,
		"uptime_s": int64(time.Since(s.started).Seconds()), "batches": s.stats.Messages.Load(),
	})
}

// ingestFailingAfter is how long commits may fail without one success
// before /healthz says so (one failed fetch that a retry mends is normal).
const ingestFailingAfter = 10 * time.Second

// ingestStalledAfter is how long messages may wait with no commit at all
// before /healthz calls ingest stalled.
const ingestStalledAfter = time.Minute

// lagCache asks the server for the consumer's backlog at most once a second.
type lagCache struct {
	mu      sync.Mutex
	at      time.Time
	pending uint64
	acks    int
	err     error
}

func (s *server) lag(ctx context.Context) (uint64, int, error) {
	s.lagc.mu.Lock()
	defer s.lagc.mu.Unlock()
	if time.Since(s.lagc.at) > time.Second {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		info, err := s.cons.Info(ctx)
		cancel()
		s.lagc.at, s.lagc.err = time.Now(), err
		if err == nil {
			s.lagc.pending, s.lagc.acks = info.NumPending, info.NumAckPending
		}
	}
	return s.lagc.pending, s.lagc.acks, s.lagc.err
}
