package transport

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func fullTestStream(t *testing.T, sc StreamConfig) (*nats.Conn, jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	srv, err := StartEmbedded(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	nc, err := Connect(NATSConfig{URL: srv.URL()}, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := EnsureStream(context.Background(), js, sc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js, s
}

// A stream at stream.max_bytes refuses new batches (discard new) instead
// of dropping old ones nobody may have read: the publisher retries for
// retry_for, then fails, saying the stream is full; it used to say
// nothing and the stream dropped the oldest batches. The failure is
// reported once: once there is room, the same publisher publishes again
// (an agent retries the artifact), and Close still says something was
// lost.
func TestPublisherFailsOnFullStream(t *testing.T) {
	ctx := context.Background()
	sc := DefaultStream
	sc.MaxBytes = 256 << 10
	nc, _, s := fullTestStream(t, sc)
	if got := s.CachedInfo().Config.Discard; got != jetstream.DiscardNew {
		t.Fatalf("the stream's discard policy is %v, want new", got)
	}
	pcfg := PublisherConfig{MaxInflight: 8, MessageBytes: 64 << 10, RetryFor: 200 * time.Millisecond}
	pub, err := NewPublisher(nc, sc, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	pub.Begin("too-big")
	rec := bigSliceTable(40000).Record("run-1", "node-7", 3)
	defer rec.Release()
	err = pub.Publish(ctx, "run-1", "node-7", "slices_detail", rec)
	if err == nil {
		err = pub.Flush(ctx)
	}
	if err == nil {
		t.Fatalf("published %d messages (%d bytes) into a stream of %d bytes: no error", pub.Stats.Messages.Load(), pub.Stats.Bytes.Load(), sc.MaxBytes)
	}
	if !StreamFull(err) || !strings.Contains(err.Error(), "stream TRAINSCOPE is full") || !strings.Contains(err.Error(), "stream.max_bytes") {
		t.Errorf("the error does not say the stream is full: %v", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Bytes > uint64(sc.MaxBytes) || int64(info.State.Msgs) >= pub.Stats.Messages.Load() || info.State.FirstSeq != 1 {
		t.Errorf("stream holds %d messages, %d bytes from sequence %d, of %d published: it should have kept the first and refused the rest",
			info.State.Msgs, info.State.Bytes, info.State.FirstSeq, pub.Stats.Messages.Load())
	}
	// room again: the failure was reported, publishing goes on
	if err := s.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	pub.Begin("small")
	small := bigSliceTable(10).Record("run-1", "node-7", 3)
	defer small.Release()
	if err := pub.Publish(ctx, "run-1", "node-7", "slices_detail", small); err != nil {
		t.Fatalf("publish after the stream had room again: %v", err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatalf("flush after the stream had room again: %v", err)
	}
	if err := pub.Close(ctx); !StreamFull(err) {
		t.Errorf("Close after a lost batch: %v, want the first failure", err)
	}
}

// A stream made before stream.discard existed drops its oldest batches:
// EnsureStream switches it to refusing new ones, unless the config says
// "old".
func TestEnsureStreamSetsDiscard(t *testing.T) {
	ctx := context.Background()
	sc := DefaultStream
	sc.Discard = DiscardOld
	_, js, s := fullTestStream(t, sc)
	if got := s.CachedInfo().Config.Discard; got != jetstream.DiscardOld {
		t.Fatalf("stream.discard old: the stream's policy is %v", got)
	}
	sc.Discard = ""
	s, err := EnsureStream(ctx, js, sc)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.Discard; got != jetstream.DiscardNew {
		t.Errorf("an old stream updated with the default: policy %v, want new", got)
	}
	if err := (StreamConfig{Name: "S", Cluster: "c", Duplicates: time.Second, Replicas: 1, Discard: "oldest"}).Validate("stream"); err == nil ||
		!strings.Contains(err.Error(), "stream.discard") {
		t.Errorf("stream.discard: oldest: %v", err)
	}
}

// The last message of a ranks batch declares how many messages its
// producer sent; Declared reads it back only from the Nth message.
func TestDeclared(t *testing.T) {
	h := nats.Header{}
	h.Set(HeaderBatches, "7")
	if p, n, ok := Declared("abc-def-7", h); !ok || p != "abc-def" || n != 7 {
		t.Errorf("Declared(abc-def-7) = %q %d %v", p, n, ok)
	}
	for _, id := range []string{"abc-6", "abc7", "-7", "stream:7"} {
		if _, _, ok := Declared(id, h); ok {
			t.Errorf("Declared(%q) with %s 7: ok", id, HeaderBatches)
		}
	}
	if _, _, ok := Declared("abc-7", nats.Header{}); ok {
		t.Errorf("Declared without the header: ok")
	}
	if BatchNumber("abc-12", "abc") != 12 || BatchNumber("abcd-12", "abc") != 0 || BatchNumber("abc-x", "abc") != 0 {
		t.Errorf("BatchNumber")
	}
	if StreamFull(errors.New("maximum bytes exceeded")) {
		t.Errorf("StreamFull of a plain error")
	}
}
