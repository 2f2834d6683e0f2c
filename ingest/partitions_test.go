package ingest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nats-io/nats.go"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
)

// startPartitionedPipe is startPipe with the stream in parts partitions.
func startPartitionedPipe(t *testing.T, parts int) *pipe {
	t.Helper()
	p := startPipe(t)
	p.sc.Partitions = parts
	s, err := transport.EnsureStream(context.Background(), p.js, p.sc)
	if err != nil {
		t.Fatal(err)
	}
	p.stream = s
	return p
}

// publishSteps publishes batch n of run: two steps rows numbered 2n and
// 2n+1, under the message id run/n.
func (p *pipe) publishSteps(t *testing.T, run string, n int) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, stream.StepsSchema)
	defer b.Release()
	for i := range 2 {
		b.Field(0).(*array.BinaryDictionaryBuilder).AppendString(run)
		b.Field(1).(*array.Int32Builder).Append(0)
		b.Field(2).(*array.Int32Builder).Append(int32(2*n + i))
		b.Field(3).(*array.Int64Builder).Append(int64(2*n+i) * 100)
		b.Field(4).(*array.Int64Builder).Append(int64(2*n+i)*100 + 90)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	data, err := transport.Encode("steps", rec)
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(transport.Subject(p.sc.Cluster, run, "h", "steps"))
	m.Data = data
	m.Header.Set(nats.MsgIdHdr, fmt.Sprintf("%s/%d", run, n))
	if _, err := p.js.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// The stream's transform and transport.PartitionOf agree on every run's
// partition, and a partition's filter finds exactly its runs.
func TestPartitionOfMatchesTheServer(t *testing.T) {
	p := startPartitionedPipe(t, 8)
	ctx := context.Background()
	seen := map[int]bool{}
	for i := range 40 {
		run := fmt.Sprintf("job-%d", i)
		p.publishSteps(t, run, 0)
		want := transport.PartitionOf(stream.RunToken(run), 8)
		seen[want] = true
		m, err := p.stream.GetLastMsgForSubject(ctx, p.sc.RunFilter(run, "", transport.PartitionSuffix(want)))
		if err != nil {
			t.Fatalf("%s: not found in partition %d: %v", run, want, err)
		}
		if transport.SubjectRun(m.Subject) != run || transport.SubjectTable(m.Subject) != "steps" {
			t.Errorf("%s: stored as %s", run, m.Subject)
		}
		if err := transport.CheckSubject(m.Subject, run, "steps"); err != nil {
			t.Error(err)
		}
	}
	if len(seen) < 6 {
		t.Errorf("40 runs fell in %d of 8 partitions", len(seen))
	}
}

type member struct {
	co     *ingest.Coordinator
	st     *duck.Store
	stats  *ingest.IngestStats
	cancel context.CancelFunc
}

func startMember(t *testing.T, p *pipe, name string, st *duck.Store) *member {
	t.Helper()
	cfg := ingest.DefaultConsumer
	cfg.MaxWait, cfg.AckWait, cfg.Lease = 50*time.Millisecond, 2*time.Second, 3*time.Second
	m := &member{st: st, stats: &ingest.IngestStats{}}
	mu := &sync.Mutex{}
	m.co = &ingest.Coordinator{JS: p.js, Stream: p.stream, SCfg: p.sc, Cfg: cfg, Member: name, Logf: t.Logf,
		New: func() *ingest.Consumer {
			return &ingest.Consumer{St: st, Mu: mu, Cfg: cfg, Stats: m.stats, Logf: func(f string, a ...any) { t.Logf(name+": "+f, a...) }}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	if err := m.co.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); m.co.Close(context.Background()) })
	return m
}

func (m *member) rebalance(t *testing.T) {
	t.Helper()
	if err := m.co.Rebalance(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds, failing after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ledger(t *testing.T, st *duck.Store) map[string]bool {
	t.Helper()
	rows, err := st.Query(context.Background(), "SELECT msg_id FROM ingested_batches")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out[id] = true
	}
	return out
}

// Two ingestors share a stream of four partitions. The second joins while
// the first holds every partition and takes half; then it dies (no hand
// back), the first takes its partitions once the leases lapse, and the
// second comes back with its database. Every batch must be committed
// once, and every run whole in one database, whatever moved under it.
func TestPartitionedIngestorsCommitEachBatchOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out leases and ack waits")
	}
	p := startPartitionedPipe(t, 4)
	a := startMember(t, p, "ing-a", openStore(t))
	a.rebalance(t)
	if got := a.co.Owned(); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("alone, ing-a holds %v", got)
	}
	batches := map[string]int{} // run -> batches published
	publish := func(runs []string, n int) {
		for _, run := range runs {
			for range n {
				p.publishSteps(t, run, batches[run])
				batches[run]++
			}
		}
	}
	total := func() int {
		n := 0
		for _, b := range batches {
			n += b
		}
		return n
	}
	// the test keeps the leases itself (no Run): each wait renews the
	// live members' leases, so that a slow machine does not let them lapse
	committed := func(ms ...*member) func() bool {
		return func() bool {
			n := int64(0)
			for _, m := range ms {
				m.rebalance(t)
				n += m.stats.Messages.Load()
			}
			return n == int64(total())
		}
	}
	old := []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"}
	publish(old, 3)
	waitFor(t, "ing-a to commit the first batches", committed(a))

	bStore := openStore(t)
	b := startMember(t, p, "ing-b", bStore)
	b.rebalance(t) // present; nothing free yet
	a.rebalance(t) // two members: hands two partitions back
	b.rebalance(t)
	if len(a.co.Owned()) != 2 || len(b.co.Owned()) != 2 {
		t.Fatalf("after ing-b joined: ing-a %v, ing-b %v", a.co.Owned(), b.co.Owned())
	}
	fresh := []string{"n0", "n1", "n2", "n3", "n4", "n5"}
	publish(old, 2)
	publish(fresh, 3)
	waitFor(t, "both to commit", committed(a, b))
	if a.stats.Forwarded.Load()+b.stats.Forwarded.Load() == 0 {
		t.Errorf("no batch was forwarded, though runs of ing-a's moved partitions got new batches")
	}

	// ing-b dies without handing anything back
	b.cancel()
	publish(old, 1)
	publish(fresh, 1)
	waitFor(t, "ing-a to take every partition once ing-b's leases lapse", func() bool {
		a.rebalance(t)
		return len(a.co.Owned()) == 4
	})
	b2 := startMember(t, p, "ing-b", bStore)
	waitFor(t, "the two to split the partitions again", func() bool {
		b2.rebalance(t)
		a.rebalance(t)
		return len(a.co.Owned()) == 2 && len(b2.co.Owned()) == 2
	})
	waitFor(t, "every batch committed", func() bool {
		a.rebalance(t)
		b2.rebalance(t)
		return len(ledger(t, a.st))+len(ledger(t, bStore)) == total()
	})

	la, lb := ledger(t, a.st), ledger(t, bStore)
	for id := range la {
		if lb[id] {
			t.Errorf("batch %s committed by both ingestors", id)
		}
	}
	for run, n := range batches {
		var inA, inB int
		q := "SELECT count(*) FROM steps WHERE run_id = ?"
		if err := a.st.Conn().QueryRowContext(context.Background(), q, run).Scan(&inA); err != nil {
			t.Fatal(err)
		}
		if err := bStore.Conn().QueryRowContext(context.Background(), q, run).Scan(&inB); err != nil {
			t.Fatal(err)
		}
		if (inA == 0) == (inB == 0) || inA+inB != 2*n {
			t.Errorf("run %s: %d rows in ing-a, %d in ing-b; want all %d in one", run, inA, inB, 2*n)
		}
	}
	// nothing is left for either: every partition's consumer and both
	// forward consumers have settled everything
	ctx := context.Background()
	for _, run := range append(old, fresh...) {
		for _, m := range []*member{a, b2} {
			if why, err := m.co.Pending(ctx, run); err != nil || why != "" {
				t.Errorf("run %s pending on %s: %q %v", run, m.co.Member, why, err)
			}
		}
	}
}
