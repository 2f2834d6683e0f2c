package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream/transport"
)

// ConsumerConfig tunes the JetStream ingestor.
type ConsumerConfig struct {
	Durable    string        `mapstructure:"durable"`
	FetchBytes int           `mapstructure:"fetch_bytes"` // bytes per pull, bounding memory
	MaxWait    time.Duration `mapstructure:"max_wait"`    // how long a pull waits for messages
	AckWait    time.Duration `mapstructure:"ack_wait"`    // redelivery after this without an ack
	// Member names this ingestor among several sharing a partitioned
	// stream (stream.partitions > 1): unique, and the same across its
	// restarts (default: the host name). Lease is how long a partition
	// stays with a member that stopped renewing it.
	Member string        `mapstructure:"member"`
	Lease  time.Duration `mapstructure:"lease"`
}

// DefaultConsumer pulls up to 16 MiB at a time.
var DefaultConsumer = ConsumerConfig{Durable: "trainscope-ingest", FetchBytes: 16 << 20,
	MaxWait: 250 * time.Millisecond, AckWait: 30 * time.Second, Lease: 10 * time.Second}

// Validate reports every problem with its key path under prefix.
func (c ConsumerConfig) Validate(prefix string) error {
	var errs []error
	if c.Durable == "" || strings.ContainsAny(c.Durable, ". *>") {
		errs = append(errs, fmt.Errorf("%s.durable: %q must be non-empty without dots, spaces or wildcards", prefix, c.Durable))
	}
	if c.FetchBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("%s.fetch_bytes: %d, want >= 1048576 (one message)", prefix, c.FetchBytes))
	}
	if c.MaxWait <= 0 {
		errs = append(errs, fmt.Errorf("%s.max_wait: must be > 0", prefix))
	}
	if c.AckWait < time.Second {
		errs = append(errs, fmt.Errorf("%s.ack_wait: %s, want >= 1s", prefix, c.AckWait))
	}
	if c.Lease < time.Second {
		errs = append(errs, fmt.Errorf("%s.lease: %s, want >= 1s", prefix, c.Lease))
	}
	if c.Member != "" && transport.MemberToken(c.Member) != c.Member {
		errs = append(errs, fmt.Errorf("%s.member: %q: letters, digits, - and _ only", prefix, c.Member))
	}
	return errors.Join(errs...)
}

// IngestStats count what the consumer did; /metrics exports them.
type IngestStats struct {
	Messages   atomic.Int64 // committed batches
	Rows       atomic.Int64
	Bytes      atomic.Int64
	Commits    atomic.Int64 // transactions
	Duplicates atomic.Int64 // redelivered or resent batches skipped
	Rejected   atomic.Int64 // poison messages terminated
	Failures   atomic.Int64 // transactions rolled back and retried
	Decode     atomic.Int64 // ns spent decoding
	Insert     atomic.Int64 // ns spent in transactions
	Recreated  atomic.Int64 // times the durable consumer was made again after it vanished
	Forwarded  atomic.Int64 // batches of runs another ingestor owns, forwarded to it
	// Missing counts batches an artifact declared (transport.HeaderBatches)
	// that never reached the ingestor: the stream discarded or lost them.
	// Each is in rejected_batches, and its run's report says so.
	Missing atomic.Int64
	// Skipped counts stream sequences an unfiltered consumer never got:
	// messages the stream dropped (discard old, max_age) or someone
	// deleted before they were delivered, whatever their run.
	Skipped     atomic.Int64
	Compactions atomic.Int64 // merges of a run's small staged files
	// CompactionsDeferred counts merges put off because a Reader of the
	// store was open
	CompactionsDeferred atomic.Int64
	// CompactionsWaited counts merges that, put off maxMergeDeferrals
	// times, held new queries back until the open ones were done
	CompactionsWaited atomic.Int64
	// Trimmed counts the times the ingestor removed from the stream what
	// it had settled (Consumer.Stream).
	Trimmed    atomic.Int64
	LastCommit atomic.Int64 // unix ns of the last committed transaction

	failingSince atomic.Int64 // unix ns of the first failed commit in a row; 0 while commits succeed
	lastErr      atomic.Pointer[string]
}

func (s *IngestStats) noteFailure(err error) {
	msg := err.Error()
	s.lastErr.Store(&msg)
	s.failingSince.CompareAndSwap(0, time.Now().UnixNano())
}

// Failing says since when commits have been failing without one success
// in between, and the last error; ok is false while ingest is healthy.
func (s *IngestStats) Failing() (since time.Time, lastErr string, ok bool) {
	ns := s.failingSince.Load()
	if ns == 0 {
		return time.Time{}, "", false
	}
	if p := s.lastErr.Load(); p != nil {
		lastErr = *p
	}
	return time.Unix(0, ns), lastErr, true
}

// Consumer moves batches from JetStream into a store: fetch (bounded by
// bytes), decode, insert every batch and its message id in one
// transaction, then acknowledge. A message whose id is already recorded is
// acknowledged without inserting; one that can never be ingested is
// recorded in rejected_batches and terminated.
type Consumer struct {
	St    *duck.Store
	Mu    *sync.Mutex // held while using St; shared with whoever else writes
	Cons  jetstream.Consumer
	Cfg   ConsumerConfig
	Stats *IngestStats
	// OnCommit, if set, learns which runs a transaction touched and
	// which of them received a ranks row (a trace or snapshot complete).
	OnCommit func(runs map[string]bool)
	// Latency, if set, hears for every committed batch how long it took
	// from its publisher's send (the sent-time header) to its commit: the
	// publish -> queryable latency.
	Latency func(time.Duration)
	Logf    func(format string, args ...any)
	// Workers bounds the staged files a commit writes at once; 0 means
	// GOMAXPROCS.
	Workers int
	// Recreate, when set, makes the durable consumer again after someone
	// deleted it (ingestion would otherwise stop for good). The new one
	// delivers the stream from the start; batches already committed are
	// skipped by their ids.
	Recreate func(ctx context.Context) (jetstream.Consumer, error)
	// Stop, when closed, ends Run gracefully: no more fetches, and what
	// was fetched is committed and acknowledged first (a partition handed
	// to another ingestor leaves nothing for it to wait out).
	Stop <-chan struct{}
	// Route, when set, owns runs across ingestors (Coordinator): a batch
	// of a run another ingestor owns is forwarded to it, not committed.
	Route router
	// Stream, when set, is the stream Cons reads: after each commit the
	// ingestor removes from it the messages of its consumer's subjects at
	// or below the ack floor (settled: committed or rejected). The stream
	// is then a buffer, not an archive: with discard new, stream.max_bytes
	// bounds how far ingest may fall behind before publishers are refused.
	Stream jetstream.Stream

	wait   time.Duration        // current fetch backoff
	small  map[stagedKey]int    // a staged store's small files per table and run; nil: not counted yet
	merges map[stagedKey]*merge // merged files written, their swap put off

	// lastSeq is the highest stream sequence first delivered to an
	// unfiltered consumer (0: unknown, or the consumer is filtered)
	lastSeq    uint64
	contiguous bool
	consMu     sync.Mutex    // over Cons while Run's fetch loop may replace it
	trimMu     sync.Mutex    // over trimmed and trimOff: commits and idle fetches trim
	trimmed    uint64        // the ack floor the stream was last trimmed to
	trimOff    bool          // the stream refused a trim: not tried again
	settledSeq atomic.Uint64 // the highest stream sequence settled
	gapRows    int           // rejected_batches rows of missing batches at the first commit
	gapsKnown  bool          // gapRows was counted
	found      []gapNote
}

// NewConsumer creates (or finds) the durable pull consumer on s.
func NewConsumer(ctx context.Context, s jetstream.Stream, cfg ConsumerConfig) (jetstream.Consumer, error) {
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       cfg.Durable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		MaxAckPending: 4096,
		Description:   "trainscope ingestor: commit to DuckDB, then ack",
	})
	if err != nil {
		return nil, fmt.Errorf("set up consumer %s: %w", cfg.Durable, err)
	}
	return c, nil
}

// Run fetches and ingests until ctx is done. Trouble reaching the server
// is retried; only a cancelled context ends it. The next fetch and its
// decoding overlap the current transaction: at most two fetches are held
// decoded, bounding memory to about three times FetchBytes.
func (c *Consumer) Run(ctx context.Context) error {
	c.watchSequence()
	fetched := make(chan []*item, 1)
	go func() {
		defer close(fetched)
		for ctx.Err() == nil && !c.stopped() {
			msgs := c.fetch(ctx)
			if len(msgs) == 0 {
				c.trimIdle(ctx) // the last commit's acks may have come after its trim
				continue
			}
			t0 := time.Now()
			items := make([]*item, len(msgs))
			for i, m := range msgs {
				items[i] = decodeItem(m)
			}
			c.noteSequence(items)
			c.Stats.Decode.Add(int64(time.Since(t0)))
			select {
			case fetched <- items:
			case <-ctx.Done():
				releaseItems(items)
				return
			}
		}
	}()
	for items := range fetched {
		c.process(ctx, items)
		releaseItems(items)
	}
	c.dropMerges()
	return nil
}

// stopped says whether Stop was closed.
func (c *Consumer) stopped() bool {
	select {
	case <-c.Stop:
		return true
	default:
		return false
	}
}

// fetchMessages caps the messages of one fetch; FetchBytes bounds it
// first for any batch over 16 KiB. (FetchBytes alone asks for up to a
// million messages, and nats.go makes two channels that long, 32 MB
// allocated and cleared on every fetch, idle ones included: with a fetch
// loop per partition that was most of the partitioned ingestor's cost.)
const fetchMessages = 1024

// fetch pulls one batch of messages, waiting out trouble with backoff.
func (c *Consumer) fetch(ctx context.Context) []jetstream.Msg {
	batch, err := c.Cons.Fetch(fetchMessages, jetstream.FetchMaxBytes(c.Cfg.FetchBytes), jetstream.FetchMaxWait(c.Cfg.MaxWait))
	if err == nil {
		// a consumer deleted under a pending fetch ends the fetch with it
		var msgs []jetstream.Msg
		for m := range batch.Messages() {
			msgs = append(msgs, m)
		}
		err = batch.Error()
		if len(msgs) > 0 || err == nil || errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
			c.wait = 0
			return msgs
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	// a pull on a consumer that is gone finds no responder; a retry of the
	// recreation after a failed one (it raced the deletion) comes here too
	if c.Recreate != nil && (errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, nats.ErrNoResponders)) {
		if _, ierr := c.Cons.Info(ctx); !errors.Is(ierr, jetstream.ErrConsumerNotFound) {
			c.backoff(ctx, fmt.Errorf("fetch: %w", err)) // still there: trouble of another kind
			return nil
		}
		if cons, rerr := c.Recreate(ctx); rerr == nil {
			c.consMu.Lock()
			c.Cons = cons
			c.consMu.Unlock()
			c.watchSequence()
			c.Stats.Recreated.Add(1)
			c.logf("ingest consumer %s was gone (%v): made it again; it delivers the stream again, and committed batches are skipped by their ids", c.Cfg.Durable, err)
			return nil
		} else {
			err = fmt.Errorf("%w; making it again failed: %v", err, rerr)
		}
	}
	c.backoff(ctx, fmt.Errorf("fetch: %w", err))
	return nil
}

// backoff logs err and sleeps, longer each time in a row (up to 5 s).
func (c *Consumer) backoff(ctx context.Context, err error) {
	c.wait = min(max(c.wait*2, 100*time.Millisecond), 5*time.Second)
	c.logf("%v (retrying in %s)", err, c.wait)
	sleep(ctx, c.wait)
}

func releaseItems(items []*item) {
	for _, it := range items {
		if it.rec != nil {
			it.rec.Release()
			it.rec = nil
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (c *Consumer) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// item is one fetched message and what became of it.
type item struct {
	msg       jetstream.Msg
	id        string
	seq       uint64
	delivered uint64 // times the server delivered it, this one included
	table     string
	run       string
	rec       arrow.RecordBatch
	sentNS    int64
	poison    error
	skipped   bool
}

// process commits a fetch and acknowledges it. When the transaction
// fails, its batches are committed one by one to find the one at fault: a
// batch that fails alone for a reason a retry cannot mend (DuckDB refuses
// a value, a constraint fails) is rejected like poison, so that it neither
// blocks the stream nor comes back forever; transient trouble (I/O,
// memory) lets the messages come back later, after a growing delay.
func (c *Consumer) process(ctx context.Context, items []*item) {
	if c.Route != nil {
		if items = c.route(ctx, items); len(items) == 0 {
			return
		}
	}
	runs, err := c.commitLocked(ctx, items)
	if err == nil {
		c.Stats.failingSince.Store(0)
		c.settle(items, runs)
		c.compactStaged(ctx)
		c.trim(ctx)
		return
	}
	if ctx.Err() != nil {
		return // shutting down: unacknowledged messages come back to the next start
	}
	c.Stats.Failures.Add(1)
	c.Stats.noteFailure(err)
	var live []*item
	for _, it := range items {
		if it.poison == nil {
			live = append(live, it)
		}
	}
	if len(items) > 1 && !transient(err) {
		c.logf("ingest %d messages: %v (committing them one by one to find the batch at fault)", len(items), err)
		for _, it := range items {
			c.process(ctx, []*item{it})
		}
		return
	}
	if len(live) == 1 && !transient(err) {
		it := live[0]
		it.poison = fmt.Errorf("%w: the batch cannot be stored: %v", transport.ErrPoison, err)
		runs, err := c.commitLocked(ctx, []*item{it})
		if err == nil {
			c.Stats.failingSince.Store(0)
			c.settle(items, runs)
			return
		}
	}
	c.logf("ingest %d messages: %v (they will be redelivered)", len(items), err)
	for _, it := range items {
		_ = it.msg.NakWithDelay(redeliveryDelay(it.msg))
	}
}

// redeliveryDelay grows with each delivery of m: 1 s, 2 s, 4 s ... 30 s.
func redeliveryDelay(m jetstream.Msg) time.Duration {
	n := uint64(1)
	if md, err := m.Metadata(); err == nil && md.NumDelivered > 0 {
		n = min(md.NumDelivered, 6)
	}
	return min(time.Second<<(n-1), 30*time.Second)
}

func (c *Consumer) commitLocked(ctx context.Context, items []*item) (map[string]bool, error) {
	t1 := time.Now()
	c.Mu.Lock()
	defer func() {
		c.Mu.Unlock()
		c.Stats.Insert.Add(int64(time.Since(t1)))
	}()
	return c.commit(ctx, items)
}

// settle acknowledges a committed fetch: OnCommit hears of the runs it
// touched, then batches are acked, poison is terminated and the stats
// count them. In that order, whoever sees a message counted (or settled
// on the stream) knows that OnCommit has heard of its run: a test that
// waits for the count and then moves the scheduler's clock cannot move it
// before the scheduler marked the run.
func (c *Consumer) settle(items []*item, runs map[string]bool) {
	c.reportGaps()
	if c.OnCommit != nil && len(runs) > 0 {
		c.OnCommit(runs)
	}
	now := time.Now().UnixNano()
	c.Stats.Commits.Add(1)
	c.Stats.LastCommit.Store(now)
	for _, it := range items {
		if it.seq > c.settledSeq.Load() {
			c.settledSeq.Store(it.seq)
		}
		switch {
		case it.poison != nil:
			c.Stats.Rejected.Add(1)
			c.logf("rejected message %d on %s (id %q, headers %v): %v", it.seq, it.msg.Subject(), it.id, it.msg.Headers(), it.poison)
			_ = it.msg.Term()
		case it.skipped:
			c.Stats.Duplicates.Add(1)
			_ = it.msg.Ack()
		default:
			c.Stats.Messages.Add(1)
			c.Stats.Rows.Add(it.rec.NumRows())
			c.Stats.Bytes.Add(int64(len(it.msg.Data())))
			_ = it.msg.Ack()
			if c.Latency != nil && it.sentNS > 0 {
				c.Latency(time.Duration(now - it.sentNS))
			}
		}
	}
}

func decodeItem(m jetstream.Msg) *item {
	it := &item{msg: m, id: m.Headers().Get(nats.MsgIdHdr)}
	if orig := m.Headers().Get(transport.HeaderOrigMsgID); orig != "" {
		it.id = orig // forwarded by another ingestor: recorded under its own id
	}
	if md, err := m.Metadata(); err == nil {
		it.seq, it.delivered = md.Sequence.Stream, md.NumDelivered
	}
	if it.id == "" {
		it.id = "stream:" + strconv.FormatUint(it.seq, 10)
	}
	it.sentNS, _ = strconv.ParseInt(m.Headers().Get(transport.HeaderSentNS), 10, 64)
	if len(m.Data()) == 0 {
		it.poison = fmt.Errorf("%w: empty message", transport.ErrPoison)
		return it
	}
	table, rec, err := transport.Decode(m.Data())
	if err != nil {
		it.poison = err
		return it
	}
	it.table, it.rec = table, rec
	it.run = transport.BatchRun(rec)
	if err := transport.CheckSubject(m.Subject(), it.run, table); err != nil {
		rec.Release()
		it.rec, it.run = nil, ""
		it.poison = fmt.Errorf("%w: %v", transport.ErrPoison, err)
	}
	return it
}
