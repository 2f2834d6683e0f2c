package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
)

// What the stream lost, and keeping it from losing more: a stream that
// drops its oldest messages when full (stream.discard: old), or expires
// them (stream.max_age), or whose messages someone deletes, loses batches
// that were published and acknowledged. The ingestor notices in two ways:
//
//   - An artifact declares how many batches it sent (transport.HeaderBatches,
//     on its ranks row). When that row commits, every batch of the
//     producer it vouches for that is neither in the ledger nor rejected
//     is recorded in rejected_batches as missing (stream.MissingReason),
//     so that the run's report says what never arrived; a missing batch
//     that turns up later (a redelivery, a publish again) is taken out.
//   - An unfiltered consumer gets every stream sequence in order: a jump
//     is messages the stream no longer held, whatever their run
//     (IngestStats.Skipped).
//
// And after each commit the ingestor trims from the stream what its
// consumer has settled (Consumer.Stream), so that a stream that refuses
// publishes when full (discard new, the default) is full only when ingest
// is behind.

// gapNote is what one commit found missing of one artifact.
type gapNote struct {
	run, artifact     string
	missing, declared int
}

// checkDeclared records, for each item that declares its producer's
// batches, those of them the store holds neither in the ledger nor in
// rejected_batches. It runs in the commit's transaction, after the
// fetch's own ledger rows are written.
//
// A small trace is a few batches, most often all in the fetch that ends
// with its ranks batch: those need no query (two queries an artifact
// were 3-4 ms of each ranks batch, most of a drain of many small traces'
// CPU). What the fetch does not hold is looked up once for all its
// artifacts: the ledger by id, rejected_batches by producer.
func (c *Consumer) checkDeclared(ctx context.Context, items []*item) error {
	var decls []declared
	for _, it := range items {
		if it.poison != nil || it.skipped {
			continue
		}
		if producer, n, ok := transport.Declared(it.id, it.msg.Headers()); ok && n >= 2 {
			decls = append(decls, declared{it, producer, n})
		}
	}
	if len(decls) == 0 {
		return nil
	}
	have, err := c.batchesOf(ctx, items, decls)
	if err != nil {
		return err
	}
	for _, d := range decls {
		var missing []int
		for k := 1; k < d.n; k++ {
			if !have[d.producer][k] {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 {
			continue
		}
		it := d.it
		gap := stream.Gap{Artifact: artifactOf(it), Producer: d.producer, Declared: d.n}
		reason := fmt.Sprintf("%sa batch of %s, one of the %d it was published in; the stream no longer held it when the ingestor got there: "+
			"dropped at its limits (stream.discard: old with stream.max_bytes, or stream.max_age) or deleted", stream.MissingReason, gap.Artifact, d.n)
		now := time.Now().UnixNano()
		for _, k := range missing {
			id := fmt.Sprintf("%s-%d", d.producer, k)
			if err := c.St.Exec(ctx, `INSERT INTO rejected_batches (stream_seq, subject, msg_id, headers, bytes, reason, rejected_ns, run_token)
				VALUES (?, ?, ?, ?, 0, ?, ?, ?)`, it.seq, it.msg.Subject(), id, gap.JSON(), reason, now,
				transport.SubjectRun(it.msg.Subject())); err != nil {
				return fmt.Errorf("record missing batch: %w", err)
			}
			// recorded missing: an artifact after it in the fetch
			// finds it in rejected_batches
			have.add(id)
		}
		c.found = append(c.found, gapNote{run: it.run, artifact: gap.Artifact, missing: len(missing), declared: d.n})
	}
	return nil
}

// declared is an item that declares how many batches its producer sent.
type declared struct {
	it       *item
	producer string
	n        int
}

// batchSets says, by producer, which of its batches 1 .. n-1 the store
// holds.
type batchSets map[string]map[int]bool

// add notes the id <producer>-N of a stored batch under its producer, if
// it is one of h's: a batch number holds no '-', so the producer is what
// comes before the last one (one map lookup, not a try of every producer
// a fetch declared).
func (h batchSets) add(id string) {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return
	}
	if ks, ok := h[id[:i]]; ok {
		if k := transport.BatchNumber(id, id[:i]); k > 0 {
			ks[k] = true
		}
	}
}

// batchesOf says which of the declared producers' batches 1 .. n-1 the
// store has: in the ledger, rejected, or already recorded missing. The
// fetch's items are in the ledger (written, or skipped as there before).
func (c *Consumer) batchesOf(ctx context.Context, items []*item, decls []declared) (batchSets, error) {
	inFetch := make(map[string]bool, len(items))
	for _, it := range items {
		if it.poison == nil {
			inFetch[it.id] = true
		}
	}
	have := batchSets{}
	for _, d := range decls {
		if have[d.producer] == nil {
			have[d.producer] = map[int]bool{}
		}
	}
	var ask []any
	asked := map[string]bool{}
	for _, d := range decls {
		for k := 1; k < d.n; k++ {
			id := fmt.Sprintf("%s-%d", d.producer, k)
			if inFetch[id] {
				have[d.producer][k] = true
			} else if !asked[id] {
				asked[id] = true
				ask = append(ask, id)
			}
		}
	}
	if len(ask) == 0 {
		return have, nil
	}
	scan := func(q string, args ...any) error {
		rows, err := c.St.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			have.add(id)
		}
		return rows.Err()
	}
	// by their ids, through the ledger's key, a chunk at a time
	const chunk = 1000
	for lo := 0; lo < len(ask); lo += chunk {
		ids := ask[lo:min(lo+chunk, len(ask))]
		q := "SELECT msg_id FROM ingested_batches WHERE msg_id IN (?" + strings.Repeat(", ?", len(ids)-1) + ")"
		if err := scan(q, ids...); err != nil {
			return nil, fmt.Errorf("batches of %s: %w", decls[0].producer, err)
		}
	}
	// the producers with batches still unaccounted for
	var open []any
	for _, d := range decls {
		for k := 1; k < d.n; k++ {
			if !have[d.producer][k] {
				open = append(open, d.producer+"-")
				break
			}
		}
	}
	for lo := 0; lo < len(open); lo += chunk {
		prefixes := open[lo:min(lo+chunk, len(open))]
		q := "SELECT msg_id FROM rejected_batches WHERE starts_with(msg_id, ?)" + strings.Repeat(" OR starts_with(msg_id, ?)", len(prefixes)-1)
		if err := scan(q, prefixes...); err != nil {
			return nil, fmt.Errorf("batches of %s: %w", strings.TrimSuffix(prefixes[0].(string), "-"), err)
		}
	}
	return have, nil
}

// artifactOf names the artifact a declaring ranks batch completes: its
// rows' source, else its producer.
func artifactOf(it *item) string {
	var names []string
	if it.rec != nil {
		for _, i := range it.rec.Schema().FieldIndices("source") {
			col, ok := it.rec.Column(i).(*array.String)
			if !ok {
				continue
			}
			for r := 0; r < col.Len(); r++ {
				if col.IsValid(r) && col.Value(r) != "" && !slices.Contains(names, col.Value(r)) {
					names = append(names, col.Value(r))
				}
			}
		}
	}
	if len(names) == 0 {
		producer, _, _ := transport.Declared(it.id, it.msg.Headers())
		return "producer " + producer
	}
	return strings.Join(names, ", ")
}

// clearArrived takes out of rejected_batches the missing-batch rows of
// the items that arrived after all (late, or published again), in the
// commit's transaction.
func (c *Consumer) clearArrived(ctx context.Context, items []*item) error {
	if !c.gapsKnown {
		if err := c.St.Conn().QueryRowContext(ctx, "SELECT count(*) FROM rejected_batches WHERE starts_with(reason, ?)",
			stream.MissingReason).Scan(&c.gapRows); err != nil {
			return fmt.Errorf("count missing batches: %w", err)
		}
		c.gapsKnown = true
	}
	if c.gapRows == 0 && c.Stats.Missing.Load() == 0 {
		return nil
	}
	var ids []any
	for _, it := range items {
		if !it.skipped && it.id != "" {
			ids = append(ids, it.id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	q := "DELETE FROM rejected_batches WHERE starts_with(reason, ?) AND msg_id IN (?" + strings.Repeat(", ?", len(ids)-1) + ")"
	if err := c.St.Exec(ctx, q, append([]any{stream.MissingReason}, ids...)...); err != nil {
		return fmt.Errorf("batches that arrived late: %w", err)
	}
	return nil
}

// reportGaps counts and logs what the commit that just settled found
// missing.
func (c *Consumer) reportGaps() {
	for _, g := range c.found {
		c.Stats.Missing.Add(int64(g.missing))
		c.logf("run %s: %d of %d batches of %s never arrived: the stream no longer held them (dropped at its limits, stream.discard: old with stream.max_bytes or stream.max_age, or deleted); recorded in rejected_batches, the run's report says so",
			g.run, g.missing, g.declared, g.artifact)
	}
	c.found = c.found[:0]
}

// watchSequence looks at the consumer: unfiltered, it gets every stream
// sequence, and noteSequence can tell what the stream skipped.
func (c *Consumer) watchSequence() {
	c.lastSeq, c.contiguous = 0, false
	info := c.Cons.CachedInfo()
	if info == nil || info.Config.FilterSubject != "" || len(info.Config.FilterSubjects) > 0 {
		return
	}
	c.contiguous, c.lastSeq = true, info.Delivered.Stream
}

// noteSequence counts the stream sequences that items, first deliveries
// in order, jump over: messages the stream no longer held.
func (c *Consumer) noteSequence(items []*item) {
	if !c.contiguous {
		return
	}
	for _, it := range items {
		if it.seq == 0 || it.delivered != 1 {
			continue // redelivered: its place was counted the first time
		}
		if c.lastSeq > 0 && it.seq > c.lastSeq+1 {
			n := it.seq - c.lastSeq - 1
			c.Stats.Skipped.Add(int64(n))
			c.logf("the stream no longer held messages %d to %d (%d) when the ingestor got there: dropped at its limits (stream.discard: old with stream.max_bytes, or stream.max_age) or deleted; "+
				"runs whose traces declared their batches are reported incomplete", c.lastSeq+1, it.seq-1, n)
		}
		c.lastSeq = max(c.lastSeq, it.seq)
	}
}

// consumer is Cons, which Run's fetch loop replaces when it makes the
// consumer again.
func (c *Consumer) consumer() jetstream.Consumer {
	c.consMu.Lock()
	defer c.consMu.Unlock()
	return c.Cons
}

// trimIdle trims when something settled is not trimmed yet: called on
// an empty fetch, it removes what the last commit settled once the
// server has its acknowledgements.
func (c *Consumer) trimIdle(ctx context.Context) {
	c.trimMu.Lock()
	behind := c.Stream != nil && !c.trimOff && c.trimmed < c.settledSeq.Load()
	c.trimMu.Unlock()
	if behind && ctx.Err() == nil {
		c.trim(ctx)
	}
}

// trim removes from the stream the messages of the consumer's subjects at
// or below its ack floor: settled, they are in the store (or rejected).
// A stream that refuses (no permission, deny purge) is not asked again.
func (c *Consumer) trim(ctx context.Context) {
	c.trimMu.Lock()
	defer c.trimMu.Unlock()
	if c.Stream == nil || c.trimOff {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := c.consumer().Info(ctx)
	if err != nil {
		return // the next commit tries again
	}
	floor := info.AckFloor.Stream
	if floor <= c.trimmed {
		return
	}
	if len(info.Config.FilterSubjects) > 0 {
		c.trimOff = true // not a consumer this ingestor made
		return
	}
	opts := []jetstream.StreamPurgeOpt{jetstream.WithPurgeSequence(floor + 1)}
	if f := info.Config.FilterSubject; f != "" {
		opts = append(opts, jetstream.WithPurgeSubject(f))
	}
	if err := c.Stream.Purge(ctx, opts...); err != nil {
		if ctx.Err() == nil && !transport.TransientJS(err) {
			c.trimOff = true
			c.logf("cannot remove settled batches from the stream: %v (it keeps them until stream.max_age; with stream.discard: new it refuses publishes once stream.max_bytes is reached)", err)
		}
		return
	}
	c.trimmed = floor
	c.Stats.Trimmed.Add(1)
}
