package ingest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
)

// router is what a Consumer asks before it commits: who owns a run, and
// how to hand a batch to its owner.
type router interface {
	me() string
	owner(ctx context.Context, runToken string) (string, error)
	forward(ctx context.Context, it *item, owner string) error
}

// Coordinator shares a partitioned stream (stream.partitions > 1) among
// several ingestors, each with its own DuckDB:
//
//   - Partitions spread the load. Each ingestor holds leases on about
//     partitions / ingestors of them in a JetStream key-value bucket, and
//     consumes each leased partition through that partition's durable
//     consumer, so its ack floor moves with the lease. A lease not renewed
//     within ingest.lease (a dead ingestor) lapses and another ingestor
//     takes the partition; a new ingestor makes the others hand partitions
//     over, which they do only after committing what they fetched.
//   - Runs stay whole. The first ingestor that commits a batch of a run
//     claims the run (an atomic create in a second bucket); a batch of a
//     run claimed by another ingestor, which reaches this one because its
//     partition moved, is forwarded to the owner on the subject
//     ...<table>.to-<owner> under its own id, and the owner deduplicates
//     it against its ledger like any redelivery. So every batch is
//     committed once, in the owner's database, and one scheduler
//     analyses each run.
//
// An owner that is down keeps its runs: their batches wait in the stream
// (ingest.member must stay the same across restarts, as a StatefulSet's
// pod name does) until it is back.
type Coordinator struct {
	JS     jetstream.JetStream
	Stream jetstream.Stream
	SCfg   transport.StreamConfig
	Cfg    ConsumerConfig
	// Member names this ingestor; it must be unique and stable.
	Member string
	// New makes the Consumer for one consumer on the stream; the
	// coordinator sets its Cons, Stop and Route.
	New  func() *Consumer
	Logf func(format string, args ...any)
	// StartupWait bounds how long Start tries its set-up calls again
	// while JetStream answers late (default 2 minutes).
	StartupWait time.Duration

	parts, runs jetstream.KeyValue
	fwd         jetstream.Consumer

	mu    sync.Mutex // over owned; held while a partition's consumer stops
	owned map[int]*leased
	wg    sync.WaitGroup
	// owners caches run claims; its own lock, as consumers ask it while
	// Rebalance (holding mu) waits for one to stop
	omu    sync.Mutex
	owners map[string]string // run token -> member
}

type leased struct {
	cons jetstream.Consumer
	rev  uint64
	stop chan struct{}
	done chan struct{}
}

// Start makes the buckets and this member's forward consumer and starts
// consuming it; Run then keeps the partition leases.
func (co *Coordinator) Start(ctx context.Context) error {
	if !co.SCfg.Partitioned() {
		return fmt.Errorf("stream.partitions is %d: a coordinator needs 2 or more", co.SCfg.Partitions)
	}
	if co.Member == "" || transport.MemberToken(co.Member) != co.Member {
		return fmt.Errorf("ingest.member %q: want letters, digits, - and _ only (a stable name per ingestor)", co.Member)
	}
	co.owned, co.owners = map[int]*leased{}, map[string]string{}
	name := "trainscope_" + transport.MemberToken(co.SCfg.Cluster)
	// a cluster that lost a node or is electing its leaders answers late:
	// each set-up call is tried again for a while (transport.RetryJS)
	retry := func(what string, fn func() error) error {
		return transport.RetryJS(ctx, co.startupWait(), co.Logf, what, fn)
	}
	err := retry("lease bucket", func() (err error) {
		co.parts, err = co.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name + "_leases",
			Description: "trainscope ingestors and their partition leases", TTL: co.Cfg.Lease, Replicas: max(co.SCfg.Replicas, 1),
			Storage: jetstream.FileStorage})
		return err
	})
	if err != nil {
		return fmt.Errorf("lease bucket: %w", err)
	}
	err = retry("run bucket", func() (err error) {
		co.runs, err = co.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name + "_runs",
			Description: "trainscope runs and the ingestor that owns each", TTL: co.SCfg.MaxAge, Replicas: max(co.SCfg.Replicas, 1),
			Storage: jetstream.FileStorage})
		return err
	})
	if err != nil {
		return fmt.Errorf("run bucket: %w", err)
	}
	if err := retry("forward consumer", func() (err error) {
		co.fwd, err = co.consumer(ctx, co.Cfg.Durable+"-to-"+transport.MemberToken(co.Member), co.SCfg.ForwardFilter(co.Member),
			"trainscope ingestor "+co.Member+": batches forwarded to it")
		return err
	}); err != nil {
		return err
	}
	co.run(ctx, co.fwd, nil, nil)
	return nil
}

func (co *Coordinator) startupWait() time.Duration {
	if co.StartupWait > 0 {
		return co.StartupWait
	}
	return 2 * time.Minute
}

// Forward is this member's forward consumer (for the health monitor).
func (co *Coordinator) Forward() jetstream.Consumer { return co.fwd }

// Consumers are the consumers this member reads now: its forward
// consumer and one per partition it holds (for the health monitor).
func (co *Coordinator) Consumers() []jetstream.Consumer {
	co.mu.Lock()
	defer co.mu.Unlock()
	out := []jetstream.Consumer{co.fwd}
	for _, p := range slices.Sorted(maps.Keys(co.owned)) {
		out = append(out, co.owned[p].cons)
	}
	return out
}

// Owned lists the partitions this member holds.
func (co *Coordinator) Owned() []int {
	co.mu.Lock()
	defer co.mu.Unlock()
	out := make([]int, 0, len(co.owned))
	for p := range co.owned {
		out = append(out, p)
	}
	sort.Ints(out)
	return out
}

// Run keeps the leases, once per ticks (nil: every ingest.lease / 3),
// until ctx is done; then it hands every partition back and waits for its
// consumers to finish.
func (co *Coordinator) Run(ctx context.Context, ticks <-chan time.Time) {
	if ticks == nil {
		t := time.NewTicker(co.Cfg.Lease / 3)
		defer t.Stop()
		ticks = t.C
	}
	for {
		if err := co.Rebalance(ctx); err != nil && ctx.Err() == nil {
			co.logf("partition leases: %v", err)
		}
		select {
		case <-ctx.Done():
			co.Close(context.WithoutCancel(ctx))
			return
		case <-ticks:
		}
	}
}

// Close hands every partition back, so that the others take them at once
// instead of after the leases lapse, and waits for the consumers to end
// (the forward consumer ends with the context Start had).
func (co *Coordinator) Close(ctx context.Context) {
	co.release(ctx)
	co.wg.Wait()
}

// Rebalance renews this member's presence and leases, hands back
// partitions above its share and takes free ones up to it.
func (co *Coordinator) Rebalance(ctx context.Context) error {
	me := transport.MemberToken(co.Member)
	if _, err := co.parts.PutString(ctx, "member."+me, strconv.FormatInt(time.Now().UnixNano(), 10)); err != nil {
		return fmt.Errorf("presence: %w", err)
	}
	members, taken, err := co.leases(ctx)
	if err != nil {
		return err
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	for p, l := range co.owned {
		rev, err := co.parts.Update(ctx, partKey(p), []byte(me), l.rev)
		if err != nil {
			co.logf("%s lost the lease on partition %d (%v): stopping its consumer", co.Member, p, err)
			co.stopLocked(p)
			continue
		}
		l.rev = rev
	}
	share := (co.SCfg.Partitions + members - 1) / max(members, 1)
	for len(co.owned) > share {
		p := slicesMax(co.owned)
		rev := co.owned[p].rev
		co.stopLocked(p)
		if err := co.parts.Delete(ctx, partKey(p), jetstream.LastRevision(rev)); err != nil {
			co.logf("hand back partition %d: %v (it lapses after %s)", p, err, co.Cfg.Lease)
		}
	}
	// start at a different place per member, so that two newcomers do
	// not race for the same partitions
	start := int(transport.PartitionOf(me, co.SCfg.Partitions))
	for i := 0; i < co.SCfg.Partitions && len(co.owned) < share; i++ {
		p := (start + i) % co.SCfg.Partitions
		if taken[p] || co.owned[p] != nil {
			continue
		}
		rev, err := co.parts.Create(ctx, partKey(p), []byte(me))
		if err != nil {
			continue // someone was quicker
		}
		if err := co.startLocked(ctx, p, rev); err != nil {
			_ = co.parts.Delete(ctx, partKey(p), jetstream.LastRevision(rev))
			return err
		}
	}
	return nil
}

// leases counts the members present and lists the partitions leased.
func (co *Coordinator) leases(ctx context.Context) (members int, taken map[int]bool, err error) {
	lister, err := co.parts.ListKeys(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("list leases: %w", err)
	}
	defer lister.Stop()
	taken = map[int]bool{}
	for k := range lister.Keys() {
		switch {
		case strings.HasPrefix(k, "member."):
			members++
		case strings.HasPrefix(k, "part."):
			if p, err := strconv.Atoi(strings.TrimPrefix(k, "part.")); err == nil {
				taken[p] = true
			}
		}
	}
	return members, taken, nil
}

func partKey(p int) string { return "part." + strconv.Itoa(p) }

func slicesMax(m map[int]*leased) int {
	best := -1
	for p := range m {
		best = max(best, p)
	}
	return best
}

func (co *Coordinator) startLocked(ctx context.Context, p int, rev uint64) error {
	cons, err := co.consumer(ctx, co.Cfg.Durable+"-p"+strconv.Itoa(p), co.SCfg.PartitionFilter(p),
		fmt.Sprintf("trainscope ingestors: partition %d of %d", p, co.SCfg.Partitions))
	if err != nil {
		return err
	}
	l := &leased{cons: cons, rev: rev, stop: make(chan struct{}), done: make(chan struct{})}
	co.owned[p] = l
	co.run(ctx, cons, l.stop, l.done)
	co.logf("%s took partition %d of %d", co.Member, p, co.SCfg.Partitions)
	return nil
}

// stopLocked ends partition p's consumer after it commits what it
// fetched, and forgets the lease.
func (co *Coordinator) stopLocked(p int) {
	l := co.owned[p]
	delete(co.owned, p)
	close(l.stop)
	<-l.done
}

// release hands every partition back (shutting down), so that the others
// take them at once instead of after the leases lapse.
func (co *Coordinator) release(ctx context.Context) {
	co.mu.Lock()
	defer co.mu.Unlock()
	for p, l := range co.owned {
		rev := l.rev
		co.stopLocked(p)
		_ = co.parts.Delete(ctx, partKey(p), jetstream.LastRevision(rev))
	}
	_ = co.parts.Delete(ctx, "member."+transport.MemberToken(co.Member))
}

func (co *Coordinator) consumer(ctx context.Context, durable, filter, desc string) (jetstream.Consumer, error) {
	c, err := co.Stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       durable,
		FilterSubject: filter,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       co.Cfg.AckWait,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		MaxAckPending: 4096,
		Description:   desc,
	})
	if err != nil {
		return nil, fmt.Errorf("set up consumer %s: %w", durable, err)
	}
	return c, nil
}

// run consumes cons in the background until ctx is done or stop closes.
func (co *Coordinator) run(ctx context.Context, cons jetstream.Consumer, stop, done chan struct{}) {
	c := co.New()
	c.Cons, c.Stop, c.Route = cons, stop, co
	co.wg.Add(1)
	go func() {
		defer co.wg.Done()
		if done != nil {
			defer close(done)
		}
		_ = c.Run(ctx)
	}()
}

func (co *Coordinator) me() string { return transport.MemberToken(co.Member) }

// owner is the member that owns the run, claiming it for this one when
// nobody has.
func (co *Coordinator) owner(ctx context.Context, runToken string) (string, error) {
	co.omu.Lock()
	o, ok := co.owners[runToken]
	co.omu.Unlock()
	if ok {
		return o, nil
	}
	key := "run." + runToken
	for range 3 {
		e, err := co.runs.Get(ctx, key)
		if err == nil {
			o = string(e.Value())
			break
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return "", fmt.Errorf("owner of run %s: %w", runToken, err)
		}
		if _, err := co.runs.Create(ctx, key, []byte(co.me())); err == nil {
			o = co.me()
			break
		} else if !errors.Is(err, jetstream.ErrKeyExists) {
			return "", fmt.Errorf("claim run %s: %w", runToken, err)
		}
	}
	if o == "" {
		return "", fmt.Errorf("owner of run %s: the claim kept changing", runToken)
	}
	co.omu.Lock()
	co.owners[runToken] = o
	co.omu.Unlock()
	return o, nil
}

// forward republishes a batch to its run's owner under its own id; the
// stream's dedup window makes a second forward of it (after a crash
// before the ack) a no-op.
func (co *Coordinator) forward(ctx context.Context, it *item, owner string) error {
	subj, err := transport.ForwardSubject(it.msg.Subject(), owner)
	if err != nil {
		return err
	}
	m := nats.NewMsg(subj)
	for k, v := range it.msg.Headers() {
		m.Header[k] = append([]string(nil), v...)
	}
	m.Header.Set(transport.HeaderOrigMsgID, it.id)
	m.Header.Set(nats.MsgIdHdr, "fwd:"+it.id)
	m.Data = it.msg.Data()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = co.JS.PublishMsg(ctx, m)
	return err
}

// Pending is Backlog.Pending over the two consumers that can hold a
// run's batches: its partition's and this member's forward consumer.
func (co *Coordinator) Pending(ctx context.Context, run string) (string, error) {
	p := transport.PartitionOf(stream.RunToken(run), co.SCfg.Partitions)
	cons, err := co.Stream.Consumer(ctx, co.Cfg.Durable+"-p"+strconv.Itoa(p))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Sprintf("partition %d, where the run's batches arrive, has had no ingestor yet", p), nil
	}
	if err != nil {
		return "", fmt.Errorf("consumer of partition %d: %w", p, err)
	}
	b := Backlog{Stream: co.Stream, Cons: cons, Cluster: co.SCfg.Cluster, Suffix: transport.PartitionSuffix(p)}
	if why, err := b.Pending(ctx, run); why != "" || err != nil {
		return why, err
	}
	b.Cons, b.Suffix = co.fwd, transport.ForwardSuffix(co.Member)
	return b.Pending(ctx, run)
}

func (co *Coordinator) logf(format string, args ...any) {
	if co.Logf != nil {
		co.Logf(format, args...)
	}
}

// route forwards the batches of runs another ingestor owns and returns
// the rest, to commit here. A batch whose owner cannot be told or
// reached comes back later (nak with delay).
func (c *Consumer) route(ctx context.Context, items []*item) []*item {
	var mine []*item
	for _, it := range items {
		run := transport.SubjectRun(it.msg.Subject())
		if it.poison != nil || run == "" || run == "_" {
			mine = append(mine, it)
			continue
		}
		owner, err := c.Route.owner(ctx, run)
		if err == nil && owner == c.Route.me() {
			mine = append(mine, it)
			continue
		}
		if err == nil {
			err = c.Route.forward(ctx, it, owner)
		}
		if err != nil {
			if ctx.Err() == nil {
				c.logf("batch %q of run %s: %v (it comes back later)", it.id, run, err)
			}
			_ = it.msg.NakWithDelay(redeliveryDelay(it.msg) + time.Duration(rand.IntN(500))*time.Millisecond)
			continue
		}
		c.Stats.Forwarded.Add(1)
		_ = it.msg.Ack()
	}
	return mine
}
