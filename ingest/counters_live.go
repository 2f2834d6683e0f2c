package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/ingest/dcgm"
	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
)

// A CounterSource is what an agent samples GPU counters from: the NVML
// sampler or a dcgm-exporter endpoint. Read appends one sweep to t.
type CounterSource interface {
	Read(ctx context.Context, t *stream.CounterTable) error
}

// NVMLSource reads the GPUs of this machine through the NVML sampler.
type NVMLSource struct {
	S      *gpu.Sampler
	labels map[int]string
	buf    []gpu.Sample
}

// Read takes one sample of every GPU.
func (n *NVMLSource) Read(_ context.Context, t *stream.CounterTable) error {
	if n.labels == nil {
		n.labels = map[int]string{}
		for _, g := range n.S.GPUs() {
			l, _ := labelsJSON(g.Labels(), nil)
			n.labels[g.Device] = l
		}
	}
	n.buf = n.S.Sample(n.buf[:0])
	for _, x := range n.buf {
		t.Device.Append(int32(x.Device))
		t.TS.Append(x.TS)
		t.Metric.Append(t.Str.ID(x.Metric))
		t.Value.Append(x.Value)
		t.Labels.Append(t.Str.ID(n.labels[x.Device]))
	}
	return nil
}

// ExporterSource scrapes a dcgm-exporter endpoint (http://node:9400/metrics).
// Its samples are this machine's: the exporter's Hostname label (in
// Kubernetes often the exporter pod's name) is kept with the other labels.
type ExporterSource struct {
	URL    string
	Client *http.Client
	Now    func() time.Time
}

// Read scrapes the endpoint once; samples without a timestamp are placed
// at the scrape's time.
func (e *ExporterSource) Read(ctx context.Context, t *stream.CounterTable) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	client := e.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("scrape %s: %w", e.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("scrape %s: %s", e.URL, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, dcgm.MaxBytes))
	if err != nil {
		return fmt.Errorf("scrape %s: %w", e.URL, err)
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	at := now().UnixNano()
	scrapes, err := dcgm.Read(bytes.NewReader(body), e.URL)
	if err != nil {
		return err
	}
	for _, sc := range scrapes {
		for _, x := range sc.Samples {
			if math.IsNaN(x.Value) || math.IsInf(x.Value, 0) {
				continue
			}
			appendSample(t, x, at, exporterDrop)
		}
	}
	return nil
}

// exporterDrop: an exporter's samples keep every label but gpu (its
// Hostname is not the host column there).
var exporterDrop = map[string]bool{"gpu": true}

// CounterLoop samples a source at every tick and publishes what it read
// as one counters batch every FlushEvery ticks, and once more when its
// context ends. Each batch is a producer of its own, named by the run, the
// host and the batch's first sample time: a batch sent again after a
// failed acknowledgement carries the same message ids and lands once.
type CounterLoop struct {
	Src        CounterSource
	P          *transport.Publisher
	RunID      string
	Host       string
	FlushEvery int
	// Warn hears of a failed read (the loop goes on; a source that keeps
	// failing is said once per minute of ticks at most).
	Warn func(string)
	// RunOf, when set, names the run at each flush instead of RunID (an
	// agent watching the folders of many runs); "" drops the batch.
	RunOf func() string
	// Published counts the rows sent, Dropped those sampled while RunOf
	// named no run.
	Published, Dropped int
}

// Run samples until ctx ends or ticks closes.
func (l *CounterLoop) Run(ctx context.Context, ticks <-chan time.Time) error {
	t := &stream.CounterTable{Str: stream.NewStrings()}
	n, failures := 0, 0
	for {
		select {
		case <-ctx.Done():
			return l.flush(context.WithoutCancel(ctx), t)
		case _, ok := <-ticks:
			if !ok {
				return l.flush(ctx, t)
			}
		}
		if err := l.Src.Read(ctx, t); err != nil {
			if failures%600 == 0 && l.Warn != nil {
				l.Warn(fmt.Sprintf("counters: %v (keeps sampling)", err))
			}
			failures++
		}
		n++
		if n%max(l.FlushEvery, 1) == 0 {
			if err := l.flush(ctx, t); err != nil {
				return err
			}
			t = &stream.CounterTable{Str: stream.NewStrings()}
		}
	}
}

func (l *CounterLoop) flush(ctx context.Context, t *stream.CounterTable) error {
	if t.Len() == 0 {
		return nil
	}
	run := l.RunID
	if l.RunOf != nil {
		if run = l.RunOf(); run == "" {
			l.Dropped += t.Len()
			return nil
		}
	}
	h := sha256.Sum256([]byte(run + "\x00" + l.Host + "\x00counters\x00" + strconv.FormatInt(t.TS.V[0], 10)))
	l.P.Begin(hex.EncodeToString(h[:12]))
	rec := t.Record(run, l.Host, 0, false)
	defer rec.Release()
	if err := l.P.Publish(ctx, run, l.Host, "counters", rec); err != nil {
		return err
	}
	if err := l.P.Flush(ctx); err != nil {
		return err
	}
	l.Published += t.Len()
	return nil
}
