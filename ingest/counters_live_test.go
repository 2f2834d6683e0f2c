package ingest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
)

// tickSource reads eight GPUs, three counters each, at a clock the test
// moves by 100 ms a read.
type tickSource struct{ at int64 }

func (s *tickSource) Read(_ context.Context, t *stream.CounterTable) error {
	s.at += 100e6
	for dev := range 8 {
		for _, m := range []string{"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP"} {
			t.Device.Append(int32(dev))
			t.TS.Append(s.at)
			t.Metric.Append(t.Str.ID(m))
			t.Value.Append(float64(dev))
			t.Labels.Append(t.Str.ID(`{"source":"test"}`))
		}
	}
	return nil
}

// runLoop runs a counter loop over ticks reads of src, flushing every
// flush reads.
func runLoop(t *testing.T, p *pipe, src ingest.CounterSource, ticks, flush int) *ingest.CounterLoop {
	t.Helper()
	pub, err := transport.NewPublisher(p.nc, p.sc, transport.DefaultPublisher)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close(context.Background())
	loop := &ingest.CounterLoop{Src: src, P: pub, RunID: "live", Host: "node-a", FlushEvery: flush, Warn: func(s string) { t.Error(s) }}
	ch := make(chan time.Time, ticks)
	for range ticks {
		ch <- time.Time{}
	}
	close(ch)
	if err := loop.Run(context.Background(), ch); err != nil {
		t.Fatal(err)
	}
	return loop
}

// An agent's counters land once: seven reads flushed every three are
// three batches (the last one on close); the same samples sent again (an
// agent that resent them after a lost acknowledgement) are dropped.
func TestCounterLoopLandsOnce(t *testing.T) {
	p := startPipe(t)
	if l := runLoop(t, p, &tickSource{at: 1_700_000_000e9}, 7, 3); l.Published != 7*24 {
		t.Fatalf("published %d rows, want %d", l.Published, 7*24)
	}
	runLoop(t, p, &tickSource{at: 1_700_000_000e9}, 7, 3)
	st := openStore(t)
	// JetStream drops the resent ones by their message ids
	info, err := p.stream.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 3 {
		t.Errorf("the stream holds %d messages, want 3", info.State.Msgs)
	}
	p.consume(t, st, func(s *ingest.IngestStats) bool { return s.Messages.Load() >= 3 })
	var rows, devices int
	var host, labels string
	if err := st.Conn().QueryRowContext(context.Background(), `SELECT count(*), count(DISTINCT device), any_value(host), any_value(labels)
		FROM counters WHERE run_id = 'live'`).Scan(&rows, &devices, &host, &labels); err != nil {
		t.Fatal(err)
	}
	if rows != 7*24 || devices != 8 || host != "node-a" || labels != `{"source":"test"}` {
		t.Errorf("counters: %d rows on %d devices of %q, labels %s", rows, devices, host, labels)
	}
}

// Counters streaming in do not hold a run's report back: the backlog
// looks past them to the run's other data.
func TestBacklogLooksPastCounters(t *testing.T) {
	p := startPipe(t)
	ctx := context.Background()
	cons, err := ingest.NewConsumer(ctx, p.stream, ingest.DefaultConsumer)
	if err != nil {
		t.Fatal(err)
	}
	b := ingest.Backlog{Stream: p.stream, Cons: cons, Cluster: p.sc.Cluster}
	// the run's trace, stored
	p.publishFiles(t, "live", sampleFiles(t)[:1])
	st := openStore(t)
	p.consume(t, st, func(s *ingest.IngestStats) bool {
		return s.Messages.Load() > 0 && s.LastCommit.Load() > 0 && pending(t, b) == ""
	})
	// then counters keep coming, not yet stored
	runLoop(t, p, &tickSource{at: 1_700_000_000e9}, 3, 3)
	if why := pending(t, b); why != "" {
		t.Errorf("counters alone hold the run back: %s", why)
	}
	// a new trace batch does
	p.publishFiles(t, "live", sampleFiles(t)[1:2])
	if why := pending(t, b); why == "" {
		t.Error("a trace not yet stored is not pending")
	}
}

func pending(t *testing.T, b ingest.Backlog) string {
	t.Helper()
	why, err := b.Pending(context.Background(), "live")
	if err != nil {
		t.Fatal(err)
	}
	return why
}

// A dcgm-exporter endpoint: one scrape is every sample, at the scrape's
// time, with every label kept (the exporter's Hostname too: the host is
// the agent's).
func TestExporterSource(t *testing.T) {
	raw, err := os.ReadFile(corpus.Path(t, "dcgm/scrape_kops__tests__TestObservability_AcceleratorMetrics_ViaDCGM__output.prom"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(raw) }))
	defer srv.Close()
	at := time.Unix(1_700_000_000, 0)
	src := &ingest.ExporterSource{URL: srv.URL, Now: func() time.Time { return at }}
	tab := &stream.CounterTable{Str: stream.NewStrings()}
	if err := src.Read(context.Background(), tab); err != nil {
		t.Fatal(err)
	}
	if tab.Len() == 0 || tab.TS.V[0] != at.UnixNano() || tab.Labels.Len() != tab.Len() {
		t.Fatalf("%d rows, first at %d, %d labels", tab.Len(), tab.TS.V[0], tab.Labels.Len())
	}
	rec := tab.Record("r", "node-a", 0, false)
	defer rec.Release()
	if err := stream.CheckSchema("counters", rec.Schema()); err != nil {
		t.Fatal(err)
	}
	bad := &ingest.ExporterSource{URL: srv.URL + "/missing"}
	srv.Config.Handler = http.NotFoundHandler()
	if err := bad.Read(context.Background(), tab); err == nil {
		t.Error("a 404 scrape is no error")
	}
}

// wideSource is eight GPUs of the fourteen counters the NVML sampler reads.
type wideSource struct{ at int64 }

func (s *wideSource) Read(_ context.Context, t *stream.CounterTable) error {
	s.at += 100e6
	for dev := range 8 {
		for m := range 14 {
			t.Device.Append(int32(dev))
			t.TS.Append(s.at)
			t.Metric.Append(t.Str.ID(counterNames[m]))
			t.Value.Append(float64(m))
			t.Labels.Append(t.Str.ID(`{"UUID":"GPU-0","modelName":"NVIDIA H100 80GB HBM3","source":"nvml"}`))
		}
	}
	return nil
}

var counterNames = []string{"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
	"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
	"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_PROF_NVLINK_TX_BYTES"}

// The agent's side of counter sampling per 100 ms tick: one read of 8 GPUs
// x 14 counters into the table, and a 50-tick (5 s) batch published to
// JetStream and acknowledged, amortised. Divide ns/op by 100 ms for the
// share of one core (the embedded server's work is counted too).
func BenchmarkCounterLoop8GPUs(b *testing.B) {
	p := startPipe(b)
	pub, err := transport.NewPublisher(p.nc, p.sc, transport.DefaultPublisher)
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close(context.Background())
	loop := &ingest.CounterLoop{Src: &wideSource{at: 1_700_000_000e9}, P: pub, RunID: "bench", Host: "node-a", FlushEvery: 50}
	ch := make(chan time.Time)
	done := make(chan error)
	go func() { done <- loop.Run(context.Background(), ch) }()
	b.ResetTimer()
	for range b.N {
		ch <- time.Time{}
	}
	close(ch)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
