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
	mux.HandleFunc("GET /metrics", s.metrics)
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

func (s *server) metrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	type m struct {
		name, kind, help string
		v                float64
	}
	st := s.stats
	ms := []m{
		{"trainscope_ingest_events_total", "counter", "Rows (events) committed to DuckDB.", float64(st.Rows.Load())},
		{"trainscope_ingest_batches_total", "counter", "Batches (messages) committed.", float64(st.Messages.Load())},
		{"trainscope_ingest_bytes_total", "counter", "Message bytes committed.", float64(st.Bytes.Load())},
		{"trainscope_ingest_commits_total", "counter", "DuckDB transactions committed.", float64(st.Commits.Load())},
		{"trainscope_ingest_duplicates_total", "counter", "Redelivered or resent batches skipped.", float64(st.Duplicates.Load())},
		{"trainscope_ingest_rejected_total", "counter", "Poison messages terminated (see rejected_batches).", float64(st.Rejected.Load())},
		{"trainscope_ingest_failures_total", "counter", "Transactions rolled back; their messages are redelivered.", float64(st.Failures.Load())},
		{"trainscope_ingest_decode_seconds_total", "counter", "Time decoding Arrow IPC.", float64(st.Decode.Load()) / 1e9},
		{"trainscope_ingest_insert_seconds_total", "counter", "Time in DuckDB transactions.", float64(st.Insert.Load()) / 1e9},
		{"trainscope_ingest_consumer_recreated_total", "counter", "Times the ingest consumer was made again after it vanished.", float64(st.Recreated.Load())},
		{"trainscope_detector_runs_total", "counter", "Detector passes over a run.", float64(s.sched.Passes.Load())},
		{"trainscope_detector_failures_total", "counter", "Detector passes that failed.", float64(s.sched.Failures.Load())},
		{"trainscope_detector_errors_total", "counter", "Detectors that failed inside a pass; the pass went on and its report names them.", float64(s.sched.DetectorErrors.Load())},
		{"trainscope_detector_last_pass_seconds", "gauge", "Duration of the last detector pass.", float64(s.sched.LastNS.Load()) / 1e9},
		{"trainscope_detector_pending_runs", "gauge", "Runs with data not yet analyzed.", float64(s.sched.pendingRuns())},
		{"trainscope_detector_partial_runs", "gauge", "Runs whose latest report is partial (data still on its way); alert rules skip them.", float64(s.sched.partialRuns())},
	}
	pending, acks, err := s.lag(r.Context())
	up := 0.0
	if err == nil {
		up = 1
	}
	ms = append(ms, m{"trainscope_ingest_consumer_up", "gauge", "1 when the ingest consumer answers, 0 when it is missing or unreachable.", up})
	if err == nil {
		ms = append(ms,
			m{"trainscope_ingest_lag_messages", "gauge", "Messages in the stream not yet delivered to the ingestor.", float64(pending)},
			m{"trainscope_ingest_unacked_messages", "gauge", "Messages delivered but not yet acknowledged.", float64(acks)})
	}
	for _, x := range ms {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %g\n", x.name, x.help, x.name, x.kind, x.name, x.v)
	}
}
