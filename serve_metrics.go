package main

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serverMetrics is what /metrics exposes, through Prometheus' own client:
// the ingestor's and the scheduler's counters (read from their atomics at
// scrape time), histograms of publish -> queryable latency and of
// detector pass time, the consumer's lag, and Go runtime and process
// metrics.
type serverMetrics struct {
	reg     *prometheus.Registry
	latency prometheus.Histogram
	pass    prometheus.Histogram
}

func newServerMetrics(s *server) *serverMetrics {
	m := &serverMetrics{reg: prometheus.NewRegistry()}
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "trainscope_ingest_latency_seconds",
		Help:    "Time from a batch's publish to its commit in DuckDB (queryable), per committed batch.",
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300},
	})
	m.pass = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "trainscope_detector_pass_seconds",
		Help:    "Duration of a detector pass over a run (copy, detectors, report).",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600},
	})
	st := s.stats
	counter := func(name, help string, v func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, v)
	}
	gauge := func(name, help string, v func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, v)
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.latency, m.pass,
		counter("trainscope_ingest_events_total", "Rows (events) committed to DuckDB.", func() float64 { return float64(st.Rows.Load()) }),
		counter("trainscope_ingest_batches_total", "Batches (messages) committed.", func() float64 { return float64(st.Messages.Load()) }),
		counter("trainscope_ingest_bytes_total", "Message bytes committed.", func() float64 { return float64(st.Bytes.Load()) }),
		counter("trainscope_ingest_commits_total", "DuckDB transactions committed.", func() float64 { return float64(st.Commits.Load()) }),
		counter("trainscope_ingest_duplicates_total", "Redelivered or resent batches skipped.", func() float64 { return float64(st.Duplicates.Load()) }),
		counter("trainscope_ingest_rejected_total", "Poison messages terminated (see rejected_batches).", func() float64 { return float64(st.Rejected.Load()) }),
		counter("trainscope_ingest_failures_total", "Transactions rolled back; their messages are redelivered.", func() float64 { return float64(st.Failures.Load()) }),
		counter("trainscope_ingest_decode_seconds_total", "Time decoding Arrow IPC.", func() float64 { return float64(st.Decode.Load()) / 1e9 }),
		counter("trainscope_ingest_insert_seconds_total", "Time in DuckDB transactions.", func() float64 { return float64(st.Insert.Load()) / 1e9 }),
		counter("trainscope_ingest_consumer_recreated_total", "Times the ingest consumer was made again after it vanished.", func() float64 { return float64(st.Recreated.Load()) }),
		counter("trainscope_detector_runs_total", "Detector passes over a run.", func() float64 { return float64(s.sched.Passes.Load()) }),
		counter("trainscope_detector_failures_total", "Detector passes that failed.", func() float64 { return float64(s.sched.Failures.Load()) }),
		counter("trainscope_detector_errors_total", "Detectors that failed inside a pass; the pass went on and its report names them.", func() float64 { return float64(s.sched.DetectorErrors.Load()) }),
		gauge("trainscope_detector_last_pass_seconds", "Duration of the last detector pass.", func() float64 { return float64(s.sched.LastNS.Load()) / 1e9 }),
		gauge("trainscope_detector_pending_runs", "Runs with data not yet analyzed.", func() float64 { return float64(s.sched.pendingRuns()) }),
		gauge("trainscope_detector_partial_runs", "Runs whose latest report is partial (data still on its way); alert rules skip them.", func() float64 { return float64(s.sched.partialRuns()) }),
		lagCollector{s},
	)
	return m
}

func (m *serverMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *serverMetrics) observeLatency(d time.Duration) { m.latency.Observe(d.Seconds()) }
func (m *serverMetrics) observePass(d time.Duration)    { m.pass.Observe(d.Seconds()) }

// lagCollector reads the consumer's state at scrape time: whether it
// answers, and (when it does) what it has yet to deliver and to settle.
type lagCollector struct{ s *server }

var (
	consumerUp = prometheus.NewDesc("trainscope_ingest_consumer_up",
		"1 when the ingest consumer answers, 0 when it is missing or unreachable.", nil, nil)
	lagMessages = prometheus.NewDesc("trainscope_ingest_lag_messages",
		"Messages in the stream not yet delivered to the ingestor.", nil, nil)
	unackedMessages = prometheus.NewDesc("trainscope_ingest_unacked_messages",
		"Messages delivered but not yet acknowledged.", nil, nil)
)

func (c lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- consumerUp
	ch <- lagMessages
	ch <- unackedMessages
}

func (c lagCollector) Collect(ch chan<- prometheus.Metric) {
	pending, acks, err := c.s.lag(context.Background())
	if err != nil {
		ch <- prometheus.MustNewConstMetric(consumerUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(consumerUp, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(lagMessages, prometheus.GaugeValue, float64(pending))
	ch <- prometheus.MustNewConstMetric(unackedMessages, prometheus.GaugeValue, float64(acks))
}
