package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
)

// Backlog tells whether the stream still holds messages of a run that the
// ingest consumer has not settled: delivered but not yet committed (a
// redelivery after a crash comes only after the consumer's ack wait), or
// not yet delivered at all. A report on such a run is on partial data.
type Backlog struct {
	Stream  jetstream.Stream
	Cons    jetstream.Consumer
	Cluster string // the stream's cluster token (transport.StreamConfig.Cluster)
	// Suffix, when set, is the sixth subject token of the messages Cons
	// consumes (a partition, or to-<member>): only those are looked at.
	Suffix string
}

// Pending says why run is not yet complete in the store, or "" when every
// message the stream holds for it is settled: the run's last message is at
// or below the consumer's ack floor, so each of its messages was committed
// (or rejected and recorded).
func (b Backlog) Pending(ctx context.Context, run string) (string, error) {
	sc := transport.StreamConfig{Cluster: b.Cluster}
	last, err := b.Stream.GetLastMsgForSubject(ctx, sc.RunFilter(run, "", b.Suffix))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("last message of run %s: %w", run, err)
	}
	if transport.SubjectTable(last.Subject) == "counters" {
		// an agent samples GPU counters all the time: what must be stored
		// before a report is the run's other data; the counters that
		// arrive after are read at its next pass
		if last, err = b.lastBesidesCounters(ctx, run); err != nil || last == nil {
			return "", err
		}
	}
	info, err := b.Cons.Info(ctx)
	if err != nil {
		return "", fmt.Errorf("consumer: %w", err)
	}
	if floor := info.AckFloor.Stream; floor < last.Sequence {
		return fmt.Sprintf("the stream holds messages of this run up to sequence %d that are not yet stored (the ingestor has settled everything up to %d; %d delivered and awaiting commit, %d not yet delivered)",
			last.Sequence, floor, info.NumAckPending, info.NumPending), nil
	}
	return "", nil
}

// lastBesidesCounters is the run's last message on any table but
// counters, or nil when it has none.
func (b Backlog) lastBesidesCounters(ctx context.Context, run string) (*jetstream.RawStreamMsg, error) {
	var last *jetstream.RawStreamMsg
	sc := transport.StreamConfig{Cluster: b.Cluster}
	for table := range stream.Tables {
		if table == "counters" {
			continue
		}
		m, err := b.Stream.GetLastMsgForSubject(ctx, sc.RunFilter(run, table, b.Suffix))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("last message of run %s: %w", run, err)
		}
		if last == nil || m.Sequence > last.Sequence {
			last = m
		}
	}
	return last, nil
}
