package stream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers every batch carries besides Nats-Msg-Id.
const (
	HeaderTable  = "Trainscope-Table"
	HeaderRows   = "Trainscope-Rows"
	HeaderSentNS = "Trainscope-Sent-Ns" // publish time, for latency
)

// PublisherConfig tunes a Publisher.
type PublisherConfig struct {
	// MaxInflight bounds messages published but not yet acknowledged.
	MaxInflight int `mapstructure:"max_inflight"`
	// MessageBytes is the target size of one message (64 KiB to 1 MiB).
	MessageBytes int `mapstructure:"message_bytes"`
	// RetryFor is how long a message is retried (server restarting,
	// stream leader moving) before publishing fails.
	RetryFor time.Duration `mapstructure:"retry_for"`
}

// DefaultPublisher fits the embedded server on a small machine.
var DefaultPublisher = PublisherConfig{MaxInflight: 64, MessageBytes: 512 << 10, RetryFor: 2 * time.Minute}

// Validate reports every problem with its key path under prefix.
func (c PublisherConfig) Validate(prefix string) error {
	var errs []error
	if c.MaxInflight < 1 {
		errs = append(errs, fmt.Errorf("%s.max_inflight: %d, want >= 1", prefix, c.MaxInflight))
	}
	if c.MessageBytes < 64<<10 || c.MessageBytes > 1<<20 {
		errs = append(errs, fmt.Errorf("%s.message_bytes: %d, want 65536 to 1048576", prefix, c.MessageBytes))
	}
	if c.RetryFor <= 0 {
		errs = append(errs, fmt.Errorf("%s.retry_for: must be > 0", prefix))
	}
	return errors.Join(errs...)
}

// PublishStats count what a Publisher sent.
type PublishStats struct {
	Messages, Bytes, Rows, Retries, Encode atomic.Int64 // Encode in ns
}

// Publisher sends table batches as Arrow IPC messages with async publish
// and a bounded number in flight. Each message's Nats-Msg-Id is the
// current producer id and a sequence number, so that publishing the same
// artifact again (a restart, a retry) yields the same ids: JetStream drops
// the copies inside its dedup window, the ingestor's batch ledger after.
// Not safe for concurrent use.
type Publisher struct {
	js      jetstream.JetStream
	cfg     PublisherConfig
	cluster string

	producer string
	seq      int

	acks   chan pending
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
	Stats  PublishStats
	closed bool
}

type pending struct {
	fut jetstream.PubAckFuture
	msg *nats.Msg
	err error // the async publish itself failed
	// flushed, on a marker sent by Flush, is closed when the loop reaches
	// it: every message before it has been acknowledged or retried.
	flushed chan struct{}
}

// NewPublisher publishes on nc under the stream's cluster token.
func NewPublisher(nc *nats.Conn, sc StreamConfig, cfg PublisherConfig) (*Publisher, error) {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(cfg.MaxInflight),
		jetstream.WithPublishAsyncTimeout(10*time.Second))
	if err != nil {
		return nil, err
	}
	p := &Publisher{js: js, cfg: cfg, cluster: sc.Cluster, acks: make(chan pending, cfg.MaxInflight)}
	p.wg.Add(1)
	go p.ackLoop()
	return p, nil
}

// Begin starts a new producer: the messages that follow are numbered
// producer-1, producer-2, ... Give the same id to the same artifact.
func (p *Publisher) Begin(producer string) {
	p.producer, p.seq = producer, 0
}

// Publish sends rec, cut into messages, to the subject of run, host and
// table. It returns once the messages are in flight; Flush waits for them.
func (p *Publisher) Publish(ctx context.Context, run, host, table string, rec arrow.RecordBatch) error {
	if err := p.firstErr(); err != nil {
		return err
	}
	if p.producer == "" {
		return errors.New("publish: Begin was not called")
	}
	t0 := time.Now()
	msgs, err := Messages(table, rec, p.cfg.MessageBytes)
	p.Stats.Encode.Add(int64(time.Since(t0)))
	if err != nil {
		return err
	}
	subject := Subject(p.cluster, run, host, table)
	for _, b := range msgs {
		p.seq++
		m := nats.NewMsg(subject)
		m.Data = b
		m.Header.Set(nats.MsgIdHdr, p.producer+"-"+strconv.Itoa(p.seq))
		m.Header.Set(HeaderTable, table)
		m.Header.Set(HeaderSentNS, strconv.FormatInt(time.Now().UnixNano(), 10))
		fut, err := p.js.PublishMsgAsync(m)
		select {
		case p.acks <- pending{fut: fut, msg: m, err: err}:
		case <-ctx.Done():
			return ctx.Err()
		}
		p.Stats.Messages.Add(1)
		p.Stats.Bytes.Add(int64(len(b)))
	}
	p.Stats.Rows.Add(rec.NumRows())
	return nil
}

// ackLoop waits for acknowledgements in order and republishes, with
// backoff, what failed; the message id makes a republish safe.
func (p *Publisher) ackLoop() {
	defer p.wg.Done()
	for pm := range p.acks {
		if pm.flushed != nil {
			close(pm.flushed)
			continue
		}
		err := pm.err
		if err == nil {
			select {
			case <-pm.fut.Ok():
				continue
			case err = <-pm.fut.Err():
			}
		}
		if err := p.retry(pm.msg, err); err != nil {
			p.setErr(err)
		}
	}
}

func (p *Publisher) retry(m *nats.Msg, cause error) error {
	deadline := time.Now().Add(p.cfg.RetryFor)
	wait := 100 * time.Millisecond
	for {
		p.Stats.Retries.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := p.js.PublishMsg(ctx, m)
		cancel()
		if err == nil {
			return nil
		}
		cause = err
		if time.Now().After(deadline) {
			return fmt.Errorf("publish %s (%s): gave up after %s: %w", m.Subject, m.Header.Get(nats.MsgIdHdr), p.cfg.RetryFor, cause)
		}
		time.Sleep(wait)
		wait = min(wait*2, 5*time.Second)
	}
}

func (p *Publisher) setErr(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

func (p *Publisher) firstErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Flush waits until every message sent so far is acknowledged (or has
// failed for good) and returns the first failure.
func (p *Publisher) Flush(ctx context.Context) error {
	if p.closed {
		return p.firstErr()
	}
	done := make(chan struct{})
	select {
	case p.acks <- pending{flushed: done}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return p.firstErr()
}

// Close flushes and stops the ack loop.
func (p *Publisher) Close(ctx context.Context) error {
	err := p.Flush(ctx)
	if !p.closed {
		p.closed = true
		close(p.acks)
		p.wg.Wait()
	}
	return err
}
