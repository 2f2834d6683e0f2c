package agent

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/nats-io/nats.go"

	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/stream/transport"
)

// startCounters starts the agent's GPU counter sampling beside its trace
// watching, on a publisher of its own; stop ends it and publishes what is
// left. Counters that cannot be sampled (no NVIDIA driver, a bad URL) are
// said once: the agent goes on publishing traces.
func startCounters(ctx context.Context, nc *nats.Conn, cfg *config.Config, n ConnOptions, co CounterOptions, logf func(string, ...any), runOf func() string) (stop func()) {
	what, period, flushAfter := co.From, co.Period, co.Flush
	var src ingest.CounterSource
	var closeSrc func()
	switch {
	case what == "off" || what == "":
		return func() {}
	case strings.HasPrefix(what, "http://") || strings.HasPrefix(what, "https://"):
		src, closeSrc = &ingest.ExporterSource{URL: what}, func() {}
		logf("counters: scraping %s every %s", what, period)
	case what == "nvml":
		s, err := gpu.OpenNVML(nvml.New(), os.Getenv("CUDA_VISIBLE_DEVICES"), func(w string) { logf("counters: %s", w) })
		if err != nil {
			if errors.Is(err, gpu.ErrNoNVML) {
				logf("counters: %v; publishing traces without GPU counters (--counters off says nothing)", err)
			} else {
				logf("counters: %v; publishing traces without GPU counters", err)
			}
			return func() {}
		}
		src, closeSrc = &ingest.NVMLSource{S: s}, s.Close
		logf("counters: sampling %d GPU(s) through NVML every %s", len(s.GPUs()), period)
	default:
		logf("counters: %q is neither nvml, off nor an http(s) URL of a dcgm-exporter; publishing traces without GPU counters", what)
		return func() {}
	}
	pub, err := transport.NewPublisher(nc, cfg.Stream, cfg.Publish)
	if err != nil {
		closeSrc()
		logf("counters: %v; publishing traces without GPU counters", err)
		return func() {}
	}
	loop := &ingest.CounterLoop{Src: src, P: pub, RunID: n.Run, Host: n.Host, RunOf: runOf,
		FlushEvery: int(flushAfter / period), Warn: func(s string) { logf("%s", s) }}
	ctx, cancel := context.WithCancel(ctx)
	ticker := time.NewTicker(period)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := loop.Run(ctx, ticker.C); err != nil && !errors.Is(err, context.Canceled) {
			logf("counters: %v; sampling stopped", err)
		}
	}()
	return func() {
		cancel()
		ticker.Stop()
		<-done
		pub.Close(context.WithoutCancel(ctx))
		closeSrc()
		logf("counters: published %d sample(s)", loop.Published)
		if loop.Dropped > 0 {
			logf("counters: dropped %d sample(s) taken while no run folder existed", loop.Dropped)
		}
	}
}
