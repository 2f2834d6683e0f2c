package ingest

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream/transport"
)

// fakeMsg is a JetStream message as the consumer sees it, recording how it
// was settled.
type fakeMsg struct {
	subject string
	data    []byte
	hdr     nats.Header
	seq     uint64
	settled []string // "ack", "term", "nak"
}

func (m *fakeMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: m.seq, Consumer: m.seq}, NumDelivered: 1}, nil
}
func (m *fakeMsg) Data() []byte                     { return m.data }
func (m *fakeMsg) Headers() nats.Header             { return m.hdr }
func (m *fakeMsg) Subject() string                  { return m.subject }
func (m *fakeMsg) Reply() string                    { return "" }
func (m *fakeMsg) Ack() error                       { m.settled = append(m.settled, "ack"); return nil }
func (m *fakeMsg) DoubleAck(context.Context) error  { return m.Ack() }
func (m *fakeMsg) Nak() error                       { m.settled = append(m.settled, "nak"); return nil }
func (m *fakeMsg) NakWithDelay(time.Duration) error { return m.Nak() }
func (m *fakeMsg) InProgress() error                { return nil }
func (m *fakeMsg) Term() error                      { m.settled = append(m.settled, "term"); return nil }
func (m *fakeMsg) TermWithReason(string) error      { return m.Term() }
func (m *fakeMsg) settledAs() string {
	if len(m.settled) != 1 {
		return "settled " + strconv.Itoa(len(m.settled)) + " times"
	}
	return m.settled[0]
}

var fakeSeq atomic.Uint64

func newFakeMsg(subject string, data []byte) *fakeMsg {
	seq := fakeSeq.Add(1)
	h := nats.Header{}
	h.Set(nats.MsgIdHdr, "fuzz-"+strconv.FormatUint(seq, 10))
	return &fakeMsg{subject: subject, data: data, hdr: h, seq: seq}
}

// realMessages are the wire messages of the bundled sample run: every
// table a trace and a snapshot produce, as the publisher cuts them.
func realMessages(t testing.TB) (subjects []string, msgs [][]byte) {
	t.Helper()
	files, err := filepath.Glob("../bench/sample/*.json.gz")
	if err != nil || len(files) == 0 {
		t.Fatalf("bench/sample: %v", err)
	}
	var c Collect
	if _, err := Read(context.Background(), &c, files[:1], Options{RunID: "fuzz", Host: "node-1", Rank: -1}); err != nil {
		t.Fatal(err)
	}
	defer Release(c.Batches)
	for _, b := range c.Batches {
		parts, err := transport.Messages(b.Table, b.Rec, 64<<10)
		if err != nil {
			t.Fatal(err)
		}
		// the first and last message of each table: enough of each layout
		for _, m := range []([]byte){parts[0], parts[len(parts)-1]} {
			subjects = append(subjects, transport.Subject("default", "fuzz", "node-1", b.Table))
			msgs = append(msgs, m)
		}
	}
	return subjects, msgs
}

var fuzzStore struct {
	once sync.Once
	st   *duck.Store
	err  error
}

// consumeFakes runs msgs through the consumer's own path (decode, one
// transaction, settle) into st and checks that each message was settled
// once, as what it was: ingested or rejected, never left to come back.
func consumeFakes(t testing.TB, st *duck.Store, msgs []*fakeMsg) {
	t.Helper()
	ctx := context.Background()
	c := &Consumer{St: st, Mu: &sync.Mutex{}, Stats: &IngestStats{}}
	items := make([]*item, len(msgs))
	for i, m := range msgs {
		items[i] = decodeItem(m)
	}
	c.process(ctx, items)
	releaseItems(items)
	for _, m := range msgs {
		switch got := m.settledAs(); got {
		case "ack":
			var n int
			if err := st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM ingested_batches WHERE stream_seq = ?", m.seq).Scan(&n); err != nil || n != 1 {
				t.Fatalf("message %d acknowledged but %d ledger rows (%v)", m.seq, n, err)
			}
		case "term":
			var n int
			if err := st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM rejected_batches WHERE stream_seq = ?", m.seq).Scan(&n); err != nil || n != 1 {
				t.Fatalf("message %d terminated but %d rejected_batches rows (%v)", m.seq, n, err)
			}
		default:
			// an in-memory store has no transient trouble: a message that
			// comes back here would come back forever
			t.Fatalf("message %d on %s: %s, want ack or term", m.seq, m.subject, got)
		}
	}
}

// Real messages with random bit flips, several to a fetch: each is
// ingested (its bytes still decode into a sane batch) or rejected, the
// good ones beside it are ingested, and nothing is left for redelivery.
func TestConsumeMutatedRealMessages(t *testing.T) {
	subjects, msgs := realMessages(t)
	st, err := duck.Open(context.Background(), "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rng := rand.New(rand.NewPCG(7, 11))
	rounds := 40
	if testing.Short() {
		rounds = 5
	}
	var acked, termed int
	for round := range rounds {
		var fetch []*fakeMsg
		for i, b := range msgs {
			b = append([]byte(nil), b...)
			if (i+round)%3 != 0 { // a third of each fetch stays intact
				for range 1 + rng.IntN(3) {
					bit := rng.IntN(len(b) * 8)
					b[bit/8] ^= 1 << (bit % 8)
				}
			}
			fetch = append(fetch, newFakeMsg(subjects[i], b))
		}
		consumeFakes(t, st, fetch)
		for _, m := range fetch {
			if m.settledAs() == "ack" {
				acked++
			} else {
				termed++
			}
		}
	}
	if acked < rounds*len(msgs)/3 || termed == 0 {
		t.Errorf("%d ingested, %d rejected of %d: the intact third should all be ingested, some flipped ones rejected", acked, termed, rounds*len(msgs))
	}
	t.Logf("%d messages: %d ingested, %d rejected", rounds*len(msgs), acked, termed)
}

// FuzzConsume drives the consumer path with mutated real messages (not
// only the codec): whatever arrives is settled once, as ingested or
// rejected, without a crash and without a redelivery loop.
func FuzzConsume(f *testing.F) {
	subjects, msgs := realMessages(f)
	for i := range msgs {
		f.Add(subjects[i], msgs[i])
	}
	f.Fuzz(func(t *testing.T, subject string, data []byte) {
		fuzzStore.once.Do(func() {
			fuzzStore.st, fuzzStore.err = duck.Open(context.Background(), "", duck.Options{})
		})
		if fuzzStore.err != nil {
			t.Fatal(fuzzStore.err)
		}
		consumeFakes(t, fuzzStore.st, []*fakeMsg{newFakeMsg(subject, data)})
	})
}
