package ingest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
)

// oracleDeclared is how checkDeclared worked before it looked up a
// fetch's batches at once: two queries for each declaring item, in order.
func oracleDeclared(ctx context.Context, c *Consumer, items []*item) error {
	for _, it := range items {
		if it.poison != nil || it.skipped {
			continue
		}
		producer, n, ok := transport.Declared(it.id, it.msg.Headers())
		if !ok || n < 2 {
			continue
		}
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
		var ids []any
		for k := 1; k < n; k++ {
			ids = append(ids, fmt.Sprintf("%s-%d", producer, k))
		}
		if err := scan("SELECT msg_id FROM ingested_batches WHERE msg_id IN (?"+strings.Repeat(", ?", len(ids)-1)+")", ids...); err != nil {
			return err
		}
		if err := scan("SELECT msg_id FROM rejected_batches WHERE starts_with(msg_id, ?)", producer+"-"); err != nil {
			return err
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
		for _, k := range missing {
			if err := c.St.Exec(ctx, `INSERT INTO rejected_batches (stream_seq, subject, msg_id, headers, bytes, reason, rejected_ns, run_token)
				VALUES (?, ?, ?, ?, 0, ?, 0, ?)`, it.seq, it.msg.Subject(), fmt.Sprintf("%s-%d", producer, k), gap.JSON(), stream.MissingReason,
				transport.SubjectRun(it.msg.Subject())); err != nil {
				return err
			}
		}
		c.found = append(c.found, gapNote{run: it.run, artifact: gap.Artifact, missing: len(missing), declared: n})
	}
	return nil
}

// gapState is what a check left: the missing batches recorded and the
// notes for the log.
func gapState(t *testing.T, c *Consumer) string {
	t.Helper()
	rows, err := c.St.Query(context.Background(), "SELECT stream_seq, msg_id, headers, run_token FROM rejected_batches ORDER BY ALL")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var seq uint64
		var id, hdr, run string
		if err := rows.Scan(&seq, &id, &hdr, &run); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %s %s %s", seq, id, hdr, run))
	}
	return strings.Join(out, "\n") + fmt.Sprintf("\nfound %+v", c.found)
}

// checkDeclared, which skips the queries for batches in the fetch and
// asks once for the rest, records the same missing batches as the two
// queries an item it replaced, over random fetches: producers whose
// names are prefixes of each other, batches earlier in the ledger,
// rejected as poison, skipped as seen, or declared twice in a fetch.
func TestCheckDeclaredAsBefore(t *testing.T) {
	ctx := context.Background()
	open := func() *Consumer {
		st, err := duck.Open(ctx, "", duck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return &Consumer{St: st, Mu: &sync.Mutex{}, Stats: &IngestStats{}}
	}
	producers := []string{"p", "p-1", "p-10", "q", "host-7:123"}
	gaps := 0
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 11))
		got, want := open(), open()
		seq := uint64(0)
		for fetch := range 1 + r.IntN(4) {
			var items []*item
			for range 1 + r.IntN(12) {
				seq++
				p := producers[r.IntN(len(producers))]
				n := 1 + r.IntN(6)
				k := 1 + r.IntN(n)
				it := &item{id: fmt.Sprintf("%s-%d", p, k), seq: seq, table: "steps", run: "run-" + p,
					msg: &fakeMsg{subject: "trainscope.v1.run-" + p + ".r0.steps", hdr: nats.Header{}}}
				if r.IntN(3) == 0 {
					// a ranks batch, declaring its producer's n
					it.id = fmt.Sprintf("%s-%d", p, n)
					it.table = "ranks"
					it.msg.(*fakeMsg).hdr.Set(transport.HeaderBatches, fmt.Sprint(n))
				}
				it.rec = stream.RanksRecord([]stream.RankRow{{RunID: it.run, Source: fmt.Sprintf("trace-%s-%d.json", p, r.IntN(2))}})
				defer it.rec.Release()
				if r.IntN(8) == 0 {
					it.poison = errors.New("poison")
				}
				items = append(items, it)
			}
			// what is in the ledger already, or twice in the fetch, is
			// skipped (both stores' ledgers are the same)
			if err := got.markSeen(ctx, items); err != nil {
				t.Fatal(err)
			}
			for _, c := range []*Consumer{got, want} {
				if err := c.record(ctx, items); err != nil {
					t.Fatal(err)
				}
			}
			if err := got.checkDeclared(ctx, items); err != nil {
				t.Fatalf("seed %d fetch %d: %v", seed, fetch, err)
			}
			if err := oracleDeclared(ctx, want, items); err != nil {
				t.Fatalf("seed %d fetch %d: oracle: %v", seed, fetch, err)
			}
			// the reason holds the time; the rest must agree
			if err := got.St.Exec(ctx, "UPDATE rejected_batches SET reason = ?, rejected_ns = 0 WHERE starts_with(reason, ?)", stream.MissingReason, stream.MissingReason); err != nil {
				t.Fatal(err)
			}
			if g, w := gapState(t, got), gapState(t, want); g != w {
				t.Fatalf("seed %d fetch %d: recorded\n%s\nwant\n%s", seed, fetch, g, w)
			}
			gaps += len(got.found)
			got.found, want.found = nil, nil
		}
	}
	if gaps == 0 {
		t.Fatal("no fetch had missing batches: the test checks nothing")
	}
}
