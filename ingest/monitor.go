package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// FailingAfter is how long commits may fail without one success before
// Health says so (one failed fetch that a retry mends is normal).
const FailingAfter = 10 * time.Second

// StalledAfter is how long messages may wait with no commit at all before
// Health calls ingest stalled.
const StalledAfter = time.Minute

// Monitor watches a running Consumer from outside: its backlog in the
// stream (asked of the server at most once a second), whether ingest is
// healthy, and its Prometheus metrics.
type Monitor struct {
	stats   *IngestStats
	durable string
	// connected says whether the NATS connection is up, and else its state.
	connected func() (bool, string)
	now       func() time.Time
	started   time.Time
	latency   prometheus.Histogram

	mu      sync.Mutex
	cons    jetstream.Consumer
	all     func() []jetstream.Consumer // UseAll's, or nil
	at      time.Time                   // when the backlog below was asked
	pending uint64
	acks    int
	err     error
}

// NewMonitor watches the consumer cons (durable name durable) whose
// counts are stats; connected reports the NATS connection's state (nil:
// always up). now is the clock (nil: time.Now).
func NewMonitor(cons jetstream.Consumer, stats *IngestStats, durable string, connected func() (bool, string), now func() time.Time) *Monitor {
	if connected == nil {
		connected = func() (bool, string) { return true, "" }
	}
	if now == nil {
		now = time.Now
	}
	return &Monitor{cons: cons, stats: stats, durable: durable, connected: connected, now: now, started: now(),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "trainscope_ingest_latency_seconds",
			Help:    "Time from a batch's publish to its commit in DuckDB (queryable), per committed batch.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300},
		})}
}

// Use makes the monitor ask cons from now on, forgetting what it knew.
func (m *Monitor) Use(cons jetstream.Consumer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cons, m.at = cons, time.Time{}
}

// UseAll makes the monitor ask every consumer consumers returns, at each
// asking, and add up their backlogs: a partitioned ingestor's forward
// consumer and the partitions it holds (Coordinator.Consumers).
func (m *Monitor) UseAll(consumers func() []jetstream.Consumer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.all, m.at = consumers, time.Time{}
}

// Consumer is the consumer the monitor asks.
func (m *Monitor) Consumer() jetstream.Consumer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cons
}

// ObserveLatency is a Consumer's Latency: it feeds the latency histogram.
func (m *Monitor) ObserveLatency(d time.Duration) { m.latency.Observe(d.Seconds()) }

// Lag is what the consumer has yet to deliver (pending) and to settle
// (acks), as the server said at most a second ago.
func (m *Monitor) Lag(ctx context.Context) (pending uint64, acks int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if now := m.now(); now.Sub(m.at) > time.Second {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		all := []jetstream.Consumer{m.cons}
		if m.all != nil {
			all = m.all()
		}
		var pending uint64
		var acks int
		var err error
		for _, c := range all {
			info, e := c.Info(ctx)
			if e != nil {
				err = e
				break
			}
			pending, acks = pending+info.NumPending, acks+info.NumAckPending
		}
		m.at, m.err = now, err
		if err == nil {
			m.pending, m.acks = pending, acks
		}
	}
	return m.pending, m.acks, m.err
}

// Health says whether ingest works: "ok", or what is wrong (NATS down,
// the consumer gone or mute, commits failing for FailingAfter, messages
// waiting with no commit for StalledAfter).
func (m *Monitor) Health(ctx context.Context) (status string, ok bool) {
	pending, acks, lagErr := m.Lag(ctx)
	now := m.now()
	waiting := pending + uint64(max(acks, 0))
	idle := now.Sub(m.started) // since the last commit, or the start
	if ns := m.stats.LastCommit.Load(); ns > 0 {
		idle = now.Sub(time.Unix(0, ns))
	}
	up, state := m.connected()
	switch since, lastErr, failing := m.stats.Failing(); {
	case !up:
		return "nats disconnected: " + state, false
	case errors.Is(lagErr, jetstream.ErrConsumerNotFound):
		return fmt.Sprintf("ingest consumer %s is missing (deleted?): nothing is ingested until it is made again, which the ingestor does on its next fetch", m.durable), false
	case lagErr != nil:
		return "ingest consumer cannot be asked for its state: " + lagErr.Error(), false
	case failing && now.Sub(since) >= FailingAfter:
		return fmt.Sprintf("ingest failing for %s: %s", now.Sub(since).Round(time.Second), lastErr), false
	case waiting > 0 && idle >= StalledAfter:
		return fmt.Sprintf("ingest stalled: %d messages wait and nothing was committed for %s", waiting, idle.Round(time.Second)), false
	}
	return "ok", true
}

// Collectors are the ingestor's Prometheus metrics: its counters (read
// from IngestStats at scrape time), the publish -> queryable latency
// histogram, and the consumer's state.
func (m *Monitor) Collectors() []prometheus.Collector {
	st := m.stats
	counter := func(name, help string, v func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, v)
	}
	secs := func(ns *atomic.Int64) func() float64 { return func() float64 { return float64(ns.Load()) / 1e9 } }
	n := func(v *atomic.Int64) func() float64 { return func() float64 { return float64(v.Load()) } }
	return []prometheus.Collector{
		m.latency,
		counter("trainscope_ingest_events_total", "Rows (events) committed to DuckDB.", n(&st.Rows)),
		counter("trainscope_ingest_batches_total", "Batches (messages) committed.", n(&st.Messages)),
		counter("trainscope_ingest_bytes_total", "Message bytes committed.", n(&st.Bytes)),
		counter("trainscope_ingest_commits_total", "DuckDB transactions committed.", n(&st.Commits)),
		counter("trainscope_ingest_duplicates_total", "Redelivered or resent batches skipped.", n(&st.Duplicates)),
		counter("trainscope_ingest_rejected_total", "Poison messages terminated (see rejected_batches).", n(&st.Rejected)),
		counter("trainscope_ingest_failures_total", "Transactions rolled back; their messages are redelivered.", n(&st.Failures)),
		counter("trainscope_ingest_decode_seconds_total", "Time decoding Arrow IPC.", secs(&st.Decode)),
		counter("trainscope_ingest_insert_seconds_total", "Time in DuckDB transactions.", secs(&st.Insert)),
		counter("trainscope_ingest_staged_merges_total", "Merges of a run's small staged Parquet files into one (serve.staged).", n(&st.Compactions)),
		counter("trainscope_ingest_staged_merges_deferred_total", "Merges of staged files put off to a later commit because a query was reading the store.", n(&st.CompactionsDeferred)),
		counter("trainscope_ingest_staged_merges_waited_total", "Merges of staged files that, put off too often, held new queries back until the open ones were done.", n(&st.CompactionsWaited)),
		counter("trainscope_ingest_consumer_recreated_total", "Times the ingest consumer was made again after it vanished.", n(&st.Recreated)),
		counter("trainscope_ingest_missing_batches_total", "Batches a trace declared (its ranks row) that never reached the ingestor: the stream dropped or lost them. "+
			"Each is in rejected_batches and its run's report says the data is incomplete.", n(&st.Missing)),
		counter("trainscope_ingest_stream_skipped_total", "Stream messages the ingest consumer never received: the stream dropped them at its limits "+
			"(stream.discard: old with stream.max_bytes, or stream.max_age) or they were deleted (one unpartitioned ingestor).", n(&st.Skipped)),
		counter("trainscope_ingest_stream_trims_total", "Times the ingestor removed the batches it had settled from the stream.", n(&st.Trimmed)),
		lagCollector{m},
	}
}

// lagCollector reads the consumer's state at scrape time: whether it
// answers, and (when it does) what it has yet to deliver and to settle.
type lagCollector struct{ m *Monitor }

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
	pending, acks, err := c.m.Lag(context.Background())
	if err != nil {
		ch <- prometheus.MustNewConstMetric(consumerUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(consumerUp, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(lagMessages, prometheus.GaugeValue, float64(pending))
	ch <- prometheus.MustNewConstMetric(unackedMessages, prometheus.GaugeValue, float64(acks))
}
