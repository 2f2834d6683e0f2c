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
func (c *Consumer) checkDeclared(ctx context.Context, items []*item) error {
	for _, it := range items {
		if it.poison != nil || it.skipped {
			continue
		}
		producer, n, ok := transport.Declared(it.id, it.msg.Headers())
		if !ok || n < 2 {
			continue
		}
		have, err := c.batchesOf(ctx, producer, n)
		if err != nil {
			return fmt.Errorf("batches of %s: %w", producer, err)
		}
		var missing []int
		for k := 1; k < n; k++ {
			if !have[k] {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 {
			continue
		}
		gap := stream.Gap{Artifact: artifactOf(it), Producer: producer, Declared: n}
		reason := fmt.Sprintf("%sa batch of %s, one of the %d it was published in; the stream no longer held it when the ingestor got there: "+
			"dropped at its limits (stream.discard: old with stream.max_bytes, or stream.max_age) or deleted", stream.MissingReason, gap.Artifact, n)
		now := time.Now().UnixNano()
		for _, k := range missing {
			if err := c.St.Exec(ctx, `INSERT INTO rejected_batches (stream_seq, subject, msg_id, headers, bytes, reason, rejected_ns, run_token)
				VALUES (?, ?, ?, ?, 0, ?, ?, ?)`, it.seq, it.msg.Subject(), fmt.Sprintf("%s-%d", producer, k), gap.JSON(), reason, now,
				transport.SubjectRun(it.msg.Subject())); err != nil {
				return fmt.Errorf("record missing batch: %w", err)
			}
		}
		c.found = append(c.found, gapNote{run: it.run, artifact: gap.Artifact, missing: len(missing), declared: n})
	}
	return nil
}

// batchesOf says which of producer's batches 1 .. n-1 the store has: in
// the ledger, rejected, or already recorded missing.
func (c *Consumer) batchesOf(ctx context.Context, producer string, n int) (map[int]bool, error) {
	have := map[int]bool{}
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
			if k := transport.BatchNumber(id, producer); k > 0 {
				have[k] = true
			}
		}
		return rows.Err()
	}
	// by their ids, through the ledger's key, a chunk at a time
	const chunk = 1000
	for lo := 1; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		ids := make([]any, 0, hi-lo)
		for k := lo; k < hi; k++ {
			ids = append(ids, fmt.Sprintf("%s-%d", producer, k))
		}
		q := "SELECT msg_id FROM ingested_batches WHERE msg_id IN (?" + strings.Repeat(", ?", len(ids)-1) + ")"
		if err := scan(q, ids...); err != nil {
			return nil, err
		}
	}
	if err := scan("SELECT msg_id FROM rejected_batches WHERE starts_with(msg_id, ?)", producer+"-"); err != nil {
		return nil, err
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
