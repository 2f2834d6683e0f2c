package ingest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
)

// publishSmall publishes files as run in 64 KiB messages (many per
// trace) and returns the messages sent.
func (p *pipe) publishSmall(t *testing.T, run string, files []string) int64 {
	t.Helper()
	ctx := context.Background()
	pcfg := transport.DefaultPublisher
	pcfg.MessageBytes = 64 << 10
	pub, err := transport.NewPublisher(p.nc, p.sc, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	sink := &ingest.PublishSink{P: pub, RunID: run, Host: "node-1"}
	if _, err := ingest.Read(ctx, sink, files, ingest.Options{RunID: run, Host: "node-1", Rank: -1}); err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return pub.Stats.Messages.Load()
}

// runUntil runs a consumer of the pipe's stream into st until cond holds
// on its stats (trimming the stream when trim is set) and returns them.
func (p *pipe) runUntil(t *testing.T, st *duck.Store, trim bool, cond func(*ingest.IngestStats) bool) *ingest.IngestStats {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := ingest.DefaultConsumer
	cfg.MaxWait = 50 * time.Millisecond
	cons, err := ingest.NewConsumer(ctx, p.stream, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	var mu sync.Mutex
	c := &ingest.Consumer{St: st, Mu: &sync.Mutex{}, Cons: cons, Cfg: cfg, Stats: &ingest.IngestStats{},
		Logf: func(f string, a ...any) { mu.Lock(); fmt.Fprintf(&logs, f+"\n", a...); mu.Unlock(); t.Logf(f, a...) }}
	if trim {
		c.Stream = p.stream
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for !cond(c.Stats) {
		if time.Now().After(deadline) {
			t.Fatalf("consumer did not finish: %d committed, %d missing, %d skipped", c.Stats.Messages.Load(), c.Stats.Missing.Load(), c.Stats.Skipped.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return c.Stats
}

// A stream that loses batches before the ingestor reads them (here two
// are deleted; discard old and max_age drop them the same way) used to
// give a run that looked complete. The trace's ranks row declares how
// many batches it was published in: the ingestor records the missing ones
// in rejected_batches, with the artifact they belong to, counts them, and
// counts the stream sequences it never received. When they turn up after
// all, they are taken out again.
func TestConsumerRecordsMissingBatches(t *testing.T) {
	ctx := context.Background()
	p := startPipe(t)
	files := sampleFiles(t)[:2]
	sent := p.publishSmall(t, "gappy", files)
	var lost []*jetstream.RawStreamMsg
	for seq := uint64(2); seq <= 3; seq++ {
		m, err := p.stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.Get(transport.HeaderTable) == "ranks" {
			t.Fatalf("message %d is a ranks batch: the test wants a trace's first batches", seq)
		}
		lost = append(lost, m)
		if err := p.stream.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	id := lost[0].Header.Get(nats.MsgIdHdr)
	producer := id[:strings.LastIndexByte(id, '-')]

	st := openStore(t)
	stats := p.runUntil(t, st, false, func(s *ingest.IngestStats) bool {
		return s.Messages.Load() == sent-2 && s.Missing.Load() > 0
	})
	if got := stats.Missing.Load(); got != 2 {
		t.Errorf("%d batches counted missing, want 2", got)
	}
	if got := stats.Skipped.Load(); got != 2 {
		t.Errorf("%d stream sequences counted skipped, want 2", got)
	}
	rows, err := st.Query(ctx, "SELECT msg_id, headers, reason, run_token FROM rejected_batches ORDER BY msg_id")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for rows.Next() {
		var msgID, hdr, reason, run string
		if err := rows.Scan(&msgID, &hdr, &reason, &run); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, msgID)
		g, err := stream.ParseGap(hdr)
		if err != nil || g.Producer != producer || g.Declared < 4 || (g.Artifact != files[0] && g.Artifact != files[1]) {
			t.Errorf("missing batch %s: gap %+v (%v), want producer %s and a trace of %v", msgID, g, err, producer, files)
		}
		if !strings.HasPrefix(reason, stream.MissingReason) || run != "gappy" {
			t.Errorf("missing batch %s: reason %q, run token %q", msgID, reason, run)
		}
	}
	rows.Close()
	if want := []string{producer + "-2", producer + "-3"}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("rejected_batches holds %v, want the two deleted batches %v", ids, want)
	}

	// the two turn up after all (as a forward would bring them: their own
	// id in Trainscope-Orig-Msg-Id): no longer missing
	for _, m := range lost {
		late := nats.NewMsg(m.Subject)
		late.Header = m.Header
		late.Header.Set(transport.HeaderOrigMsgID, m.Header.Get(nats.MsgIdHdr))
		late.Header.Set(nats.MsgIdHdr, "late:"+m.Header.Get(nats.MsgIdHdr))
		late.Data = m.Data
		if _, err := p.js.PublishMsg(ctx, late); err != nil {
			t.Fatal(err)
		}
	}
	p.runUntil(t, st, false, func(s *ingest.IngestStats) bool { return s.Messages.Load() == 2 })
	var n int
	if err := st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM rejected_batches").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d rejected_batches rows (%v) after the missing batches arrived, want 0", n, err)
	}
}

// The ingestor removes from the stream what it has settled, so that a
// stream that refuses publishes when full (discard new) is full only
// while ingest is behind, not after stream.max_bytes of history; the
// backlog of a trimmed run is settled.
func TestConsumerTrimsSettled(t *testing.T) {
	ctx := context.Background()
	p := startPipe(t)
	files := sampleFiles(t)[:2]
	sent := p.publishSmall(t, "trimmed", files)
	st := openStore(t)
	var msgs uint64
	stats := p.runUntil(t, st, true, func(s *ingest.IngestStats) bool {
		if s.Messages.Load() < sent {
			return false
		}
		info, err := p.stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		msgs = info.State.Msgs
		return msgs == 0
	})
	if stats.Trimmed.Load() == 0 || stats.Missing.Load() != 0 || stats.Skipped.Load() != 0 {
		t.Errorf("trims %d, missing %d, skipped %d", stats.Trimmed.Load(), stats.Missing.Load(), stats.Skipped.Load())
	}
	cons, err := p.stream.Consumer(ctx, ingest.DefaultConsumer.Durable)
	if err != nil {
		t.Fatal(err)
	}
	if why, err := (ingest.Backlog{Stream: p.stream, Cons: cons, Cluster: p.sc.Cluster}).Pending(ctx, "trimmed"); why != "" || err != nil {
		t.Errorf("a trimmed, settled run is pending: %q %v", why, err)
	}
}
