package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
)

// What a hostile but fair user sends a serving ingestor, through NATS:
// bit-flipped copies of a real ranks batch (one once made the decoder
// allocate ~158 GB and kill the server, again on every restart), a batch
// whose text is not UTF-8 (once retried about once a second forever), a
// batch whose subject names another run, and a batch DuckDB refuses (here
// through a CHECK constraint) in the same fetch as good ones. Each bad one
// is rejected once and recorded; every good one is ingested; nothing is
// left for redelivery.
func TestPipelineRefusesHostileBatches(t *testing.T) {
	p := startPipe(t)
	ctx := context.Background()
	st := openStore(t)
	// a store that refuses one value of a column, as a store with a
	// constraint (or a bug) would: the only way left for a batch that
	// passes every check to fail on insert
	if err := st.Exec(ctx, "DROP TABLE threads"); err != nil {
		t.Fatal(err)
	}
	if err := st.Exec(ctx, "CREATE TABLE threads (run_id VARCHAR NOT NULL, rank INTEGER NOT NULL, tid BIGINT NOT NULL CHECK (tid <> 666), name VARCHAR NOT NULL)"); err != nil {
		t.Fatal(err)
	}

	good := stream.RanksRecord([]stream.RankRow{{RunID: "hostile", Host: "node-1", Source: "rank0.json", RankSource: "distributedInfo",
		Rank: 0, WorldSize: 8, Backend: "nccl", GPUName: "NVIDIA H100 80GB HBM3", BaseTimeNS: 1_700_000_000_000_000_000,
		StartNS: 1_700_000_000_100_000_000, EndNS: 1_700_000_001_000_000_000, Complete: true, Events: 1000}})
	defer good.Release()
	goodMsg, err := transport.Encode("ranks", good)
	if err != nil {
		t.Fatal(err)
	}
	badText := stream.RanksRecord([]stream.RankRow{{RunID: "hostile", Host: "node\xff-2", Source: "rank1.json", Rank: 1}})
	defer badText.Release()
	badTextMsg, _ := transport.Encode("ranks", badText)
	threads := func(tid int64) []byte {
		rec := stream.ThreadsRecord("hostile", 0, []int64{tid}, map[int64]string{tid: "worker"})
		defer rec.Release()
		b, err := transport.Encode("threads", rec)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	type msg struct {
		name, subject string
		data          []byte
		wantRejected  bool
	}
	ranksSubject := transport.Subject("default", "hostile", "node-1", "ranks")
	var msgs []msg
	// every 97th bit of the good message flipped: structure and values
	for bit := 0; bit < len(goodMsg)*8; bit += 97 {
		b := bytes.Clone(goodMsg)
		b[bit/8] ^= 1 << (bit % 8)
		msgs = append(msgs, msg{name: fmt.Sprintf("flip-%d", bit), subject: ranksSubject, data: b})
	}
	msgs = append(msgs,
		msg{"invalid UTF-8", ranksSubject, badTextMsg, true},
		msg{"subject of another run", transport.Subject("default", "other-run", "node-1", "ranks"), goodMsg, true},
		msg{"subject of another table", transport.Subject("default", "hostile", "node-1", "steps"), goodMsg, true},
		msg{"threads ok", transport.Subject("default", "hostile", "node-1", "threads"), threads(7), false},
		msg{"threads refused by the store", transport.Subject("default", "hostile", "node-1", "threads"), threads(666), true},
		msg{"threads ok too", transport.Subject("default", "hostile", "node-1", "threads"), threads(8), false},
	)
	for i, m := range msgs {
		nm := nats.NewMsg(m.subject)
		nm.Data = m.data
		nm.Header.Set(nats.MsgIdHdr, fmt.Sprintf("hostile-%d", i))
		nm.Header.Set("Case", m.name)
		if _, err := p.js.PublishMsg(ctx, nm); err != nil {
			t.Fatal(err)
		}
	}
	stats := p.consume(t, st, func(s *ingest.IngestStats) bool {
		return s.Messages.Load()+s.Rejected.Load()+s.Duplicates.Load() == int64(len(msgs))
	})

	rejected := map[string]string{}
	rows, err := st.Query(ctx, "SELECT headers, reason, run_token FROM rejected_batches")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var hdr, reason, token string
		if err := rows.Scan(&hdr, &reason, &token); err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if strings.Contains(hdr, "Case:["+m.name+"]") {
				rejected[m.name] = reason
			}
		}
	}
	rows.Close()
	for _, m := range msgs {
		if _, ok := rejected[m.name]; m.wantRejected && !ok {
			t.Errorf("%s: not rejected", m.name)
		}
	}
	for name, want := range map[string]string{"invalid UTF-8": "UTF-8", "subject of another run": "other-run",
		"subject of another table": "table", "threads refused by the store": "cannot be stored"} {
		if !strings.Contains(rejected[name], want) {
			t.Errorf("%s: rejected with %q, want a reason mentioning %q", name, rejected[name], want)
		}
	}
	var tids string
	if err := st.Conn().QueryRowContext(ctx, "SELECT string_agg(tid::VARCHAR, ',' ORDER BY tid) FROM threads").Scan(&tids); err != nil || tids != "7,8" {
		t.Errorf("threads ingested %q (%v), want 7,8: the good batches of the fetch the bad one was in", tids, err)
	}
	// the unflipped-equivalent copies decode and are the same batch: one
	// ranks row for rank 0 (flips that changed a value but kept a sane
	// batch land as rows of their own, which is all a decoder can know)
	var ranks int
	st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM ranks WHERE run_id = 'hostile'").Scan(&ranks)
	if ranks == 0 {
		t.Errorf("no ranks row ingested at all")
	}
	ci, err := mustConsumer(t, p).Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.NumAckPending != 0 || ci.NumPending != 0 {
		t.Errorf("consumer still has %d pending acks, %d pending: something will come back", ci.NumAckPending, ci.NumPending)
	}
	t.Logf("%d messages: %d ingested, %d rejected, %d duplicates; %d failed transactions", len(msgs),
		stats.Messages.Load(), stats.Rejected.Load(), stats.Duplicates.Load(), stats.Failures.Load())
}

func mustConsumer(t *testing.T, p *pipe) jetstream.Consumer {
	t.Helper()
	c, err := p.stream.Consumer(context.Background(), ingest.DefaultConsumer.Durable)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
