package transport

import (
	"cmp"
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
// The last message of a ranks batch declares how many the producer sent
// (HeaderBatches), so that the ingestor can tell when some never arrived.
//
// A message the server refuses (a full stream, one that is down) is
// retried with backoff for RetryFor, holding the messages behind it: the
// publisher blocks. Then it fails: Publish or Flush reports the failure
// once (an agent that retries the artifact later can succeed), and Close
// reports the first failure of the publisher's life, so that a publish
// that lost anything never ends in success. Not safe for concurrent use.
type Publisher struct {
	js      jetstream.JetStream
	cfg     PublisherConfig
	cluster string
	stream  string

	producer string
	seq      int

	acks   chan pending
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error // not yet reported by Publish or Flush
	failed error // the first failure ever, for Close
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
	p := &Publisher{js: js, cfg: cfg, cluster: sc.Cluster, stream: sc.Name, acks: make(chan pending, cfg.MaxInflight)}
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
	if err := p.takeErr(); err != nil {
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
	for i, b := range msgs {
		p.seq++
		m := nats.NewMsg(subject)
		m.Data = b
		m.Header.Set(nats.MsgIdHdr, p.producer+"-"+strconv.Itoa(p.seq))
		m.Header.Set(HeaderTable, table)
		if table == "ranks" && i == len(msgs)-1 {
			// the artifact is complete: its producer sent this many
			m.Header.Set(HeaderBatches, strconv.Itoa(p.seq))
		}
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
// backoff, what failed; the message id makes a republish safe. Once a
// message has given up, the failures after it until the next Flush (or a
// message that gets through) fail at once: a stream that stayed full for
// RetryFor does not hold every message in flight for RetryFor more.
func (p *Publisher) ackLoop() {
	defer p.wg.Done()
	gaveUp := false
	for pm := range p.acks {
		if pm.flushed != nil {
			gaveUp = false
			close(pm.flushed)
			continue
		}
		err := pm.err
		if err == nil {
			select {
			case <-pm.fut.Ok():
				gaveUp = false
				continue
			case err = <-pm.fut.Err():
			}
		}
		if gaveUp {
			p.setErr(p.failure(pm.msg, err))
			continue
		}
		if err := p.retry(pm.msg, err); err != nil {
			gaveUp = true
			p.setErr(err)
		}
	}
}

// failure is the error of a message that was not stored: for a stream at
// its limits, what that means and what to do.
func (p *Publisher) failure(m *nats.Msg, cause error) error {
	if StreamFull(cause) {
		return fmt.Errorf("publish %s (%s): stream %s is full: it refuses new batches at its limit (stream.max_bytes, stream.discard: new) "+
			"until the ingestor has settled what it holds, and this batch was not stored (retried for %s): is 'trainscope serve' running and keeping up "+
			"(trainscope_ingest_lag_messages)? publish again once it has caught up: %w",
			m.Subject, m.Header.Get(nats.MsgIdHdr), cmp.Or(p.stream, "(unnamed)"), p.cfg.RetryFor, cause)
	}
	return fmt.Errorf("publish %s (%s): gave up after %s: %w", m.Subject, m.Header.Get(nats.MsgIdHdr), p.cfg.RetryFor, cause)
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
			return p.failure(m, cause)
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
	if p.failed == nil {
		p.failed = err
	}
}

// takeErr returns the failure not yet reported, and forgets it.
func (p *Publisher) takeErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.err
	p.err = nil
	return err
}

func (p *Publisher) firstFailure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// Flush waits until every message sent so far is acknowledged (or has
// failed for good) and returns the first failure since the last one
// Publish or Flush reported.
func (p *Publisher) Flush(ctx context.Context) error {
	if p.closed {
		return p.takeErr()
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
	return p.takeErr()
}

// Close flushes and stops the ack loop. It returns the first failure of
// the publisher's life, reported before or not.
func (p *Publisher) Close(ctx context.Context) error {
	err := p.Flush(ctx)
	if !p.closed {
		p.closed = true
		close(p.acks)
		p.wg.Wait()
	}
	if first := p.firstFailure(); first != nil {
		return first
	}
	return err
}
