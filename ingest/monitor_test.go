package ingest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// infoConsumer answers Info with a fixed backlog or error, and counts
// the questions (the Monitor asks under its own lock).
type infoConsumer struct {
	jetstream.Consumer
	pending, acks int
	err           error
	asked         int
}

func (c *infoConsumer) Info(context.Context) (*jetstream.ConsumerInfo, error) {
	c.asked++
	if c.err != nil {
		return nil, c.err
	}
	return &jetstream.ConsumerInfo{NumPending: uint64(c.pending), NumAckPending: c.acks}, nil
}

func TestMonitorHealth(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		name      string
		up        bool
		cons      infoConsumer
		since     time.Duration // the monitor's age at the check
		committed time.Duration // since the last commit; 0: never
		failing   time.Duration // since commits began failing; 0: they do not
		want      string
	}{
		{name: "idle and empty", up: true, since: time.Hour, want: "ok"},
		{name: "nats down", up: false, want: "nats disconnected: CLOSED"},
		{name: "consumer deleted", up: true, cons: infoConsumer{err: jetstream.ErrConsumerNotFound}, want: "ingest consumer trainscope-ingest is missing"},
		{name: "consumer mute", up: true, cons: infoConsumer{err: errors.New("context deadline exceeded")}, want: "cannot be asked for its state: context deadline exceeded"},
		{name: "failing briefly", up: true, since: time.Hour, failing: FailingAfter - time.Second, want: "ok"},
		{name: "failing", up: true, since: time.Hour, failing: FailingAfter, want: "ingest failing for 10s: disk full"},
		{name: "backlog moving", up: true, cons: infoConsumer{pending: 40}, since: time.Hour, committed: StalledAfter - time.Second, want: "ok"},
		{name: "stalled", up: true, cons: infoConsumer{pending: 40, acks: 2}, since: time.Hour, committed: StalledAfter, want: "ingest stalled: 42 messages wait and nothing was committed for 1m0s"},
		{name: "stalled since start", up: true, cons: infoConsumer{acks: 1}, since: 2 * StalledAfter, want: "nothing was committed for 2m0s"},
		{name: "just started", up: true, cons: infoConsumer{pending: 5}, since: time.Second, want: "ok"},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := t0
			stats := &IngestStats{}
			m := NewMonitor(&c.cons, stats, "trainscope-ingest", func() (bool, string) { return c.up, "CLOSED" }, func() time.Time { return now })
			now = now.Add(c.since)
			if c.committed > 0 {
				stats.LastCommit.Store(now.Add(-c.committed).UnixNano())
			}
			if c.failing > 0 {
				stats.noteFailure(errors.New("disk full"))
				stats.failingSince.Store(now.Add(-c.failing).UnixNano())
			}
			status, ok := m.Health(context.Background())
			if !strings.Contains(status, c.want) || ok != (c.want == "ok") {
				t.Errorf("Health = %q, %v; want %q", status, ok, c.want)
			}
		})
	}
}

// The server is asked for the backlog at most once a second, and Use
// makes the next question go to the new consumer at once.
func TestMonitorLagCached(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	a := &infoConsumer{pending: 3}
	m := NewMonitor(a, &IngestStats{}, "d", nil, func() time.Time { return now })
	ctx := context.Background()
	for range 3 {
		if p, _, err := m.Lag(ctx); p != 3 || err != nil {
			t.Fatalf("Lag = %d, %v", p, err)
		}
	}
	now = now.Add(1500 * time.Millisecond)
	m.Lag(ctx)
	if a.asked != 2 {
		t.Errorf("asked %d times in 1.5 s, want 2", a.asked)
	}
	b := &infoConsumer{pending: 9}
	m.Use(b)
	if p, _, _ := m.Lag(ctx); p != 9 {
		t.Errorf("after Use, Lag = %d, want 9", p)
	}
}

func TestMonitorCollectors(t *testing.T) {
	stats := &IngestStats{}
	stats.Rows.Store(1234)
	stats.Insert.Store(2_500_000_000)
	cons := &infoConsumer{pending: 7, acks: 1}
	m := NewMonitor(cons, stats, "d", nil, nil)
	m.ObserveLatency(300 * time.Millisecond)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors()...)
	want := map[string]float64{
		"trainscope_ingest_events_total":         1234,
		"trainscope_ingest_insert_seconds_total": 2.5,
		"trainscope_ingest_lag_messages":         7,
		"trainscope_ingest_unacked_messages":     1,
		"trainscope_ingest_consumer_up":          1,
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			switch {
			case mt.Counter != nil:
				got[f.GetName()] = mt.Counter.GetValue()
			case mt.Gauge != nil:
				got[f.GetName()] = mt.Gauge.GetValue()
			case mt.Histogram != nil:
				got[f.GetName()] = float64(mt.Histogram.GetSampleCount())
			}
		}
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}
	if got["trainscope_ingest_latency_seconds"] != 1 {
		t.Errorf("latency histogram counts %v, want 1", got["trainscope_ingest_latency_seconds"])
	}
	ch := make(chan prometheus.Metric, 8)
	lagCollector{NewMonitor(&infoConsumer{err: jetstream.ErrConsumerNotFound}, stats, "d", nil, nil)}.Collect(ch)
	if n := len(ch); n != 1 {
		t.Errorf("a missing consumer gives %d lag metrics, want only consumer_up", n)
	}
}

// A partitioned ingestor's backlog is its forward consumer's and every
// partition's it holds, asked anew as partitions come and go; one of
// them failing to answer is the monitor's error.
func TestMonitorLagOverPartitions(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	fwd, p0, p1 := &infoConsumer{pending: 1}, &infoConsumer{pending: 10, acks: 2}, &infoConsumer{pending: 100}
	held := []jetstream.Consumer{fwd, p0}
	m := NewMonitor(nil, &IngestStats{}, "d", nil, func() time.Time { return now })
	m.UseAll(func() []jetstream.Consumer { return held })
	ctx := context.Background()
	if p, a, err := m.Lag(ctx); p != 11 || a != 2 || err != nil {
		t.Errorf("Lag = %d, %d, %v; want 11, 2", p, a, err)
	}
	held = append(held, p1)
	now = now.Add(2 * time.Second)
	if p, _, _ := m.Lag(ctx); p != 111 {
		t.Errorf("after taking a partition, Lag = %d, want 111", p)
	}
	p1.err = jetstream.ErrConsumerNotFound
	now = now.Add(2 * time.Second)
	if status, ok := m.Health(ctx); ok || !strings.Contains(status, "missing") {
		t.Errorf("Health = %q, %v with a partition's consumer gone", status, ok)
	}
}
