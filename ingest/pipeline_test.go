package ingest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
)

// pipe is an embedded JetStream server with the trainscope stream, and a
// client connection to it.
type pipe struct {
	srv    *transport.Embedded
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	sc     transport.StreamConfig
	// onCommit, when set, is the consumers' OnCommit, given their stats
	onCommit func(*ingest.IngestStats, map[string]bool)
}

func startPipe(t testing.TB) *pipe {
	t.Helper()
	srv, err := transport.StartEmbedded(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	nc, err := transport.Connect(transport.NATSConfig{URL: srv.URL()}, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	sc := transport.DefaultStream
	s, err := transport.EnsureStream(context.Background(), js, sc)
	if err != nil {
		t.Fatal(err)
	}
	return &pipe{srv: srv, nc: nc, js: js, stream: s, sc: sc}
}

// publishFiles publishes files as run and returns the messages sent.
func (p *pipe) publishFiles(t *testing.T, run string, files []string) int64 {
	t.Helper()
	ctx := context.Background()
	pub, err := transport.NewPublisher(p.nc, p.sc, transport.DefaultPublisher)
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

// consume runs a consumer into st until cond holds on its stats.
func (p *pipe) consume(t *testing.T, st *duck.Store, cond func(*ingest.IngestStats) bool) *ingest.IngestStats {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := ingest.DefaultConsumer
	cfg.MaxWait = 50 * time.Millisecond
	cons, err := ingest.NewConsumer(ctx, p.stream, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &ingest.Consumer{St: st, Mu: &sync.Mutex{}, Cons: cons, Cfg: cfg, Stats: &ingest.IngestStats{}, Logf: t.Logf}
	if p.onCommit != nil {
		c.OnCommit = func(runs map[string]bool) { p.onCommit(c.Stats, runs) }
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for !cond(c.Stats) {
		if time.Now().After(deadline) {
			t.Fatalf("consumer did not finish: %d committed, %d duplicates, %d rejected", c.Stats.Messages.Load(), c.Stats.Duplicates.Load(), c.Stats.Rejected.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return c.Stats
}

var pipelineTables = []string{"slices_core", "slices_detail", "steps", "counters", "ranks", "threads", "stacks", "process_groups", "runs",
	"mem_segments", "mem_blocks", "mem_events", "mem_settings", "kernel_metrics"}

// fingerprint is a per-table row count and a checksum over its rows.
func fingerprint(t *testing.T, st *duck.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tbl := range pipelineTables {
		var n int64
		var sum any
		q := fmt.Sprintf("SELECT count(*), sum(hash(s)::HUGEINT)::VARCHAR FROM %s s", tbl)
		if err := st.Conn().QueryRowContext(context.Background(), q).Scan(&n, &sum); err != nil {
			t.Fatalf("%s: %v", tbl, err)
		}
		out[tbl] = fmt.Sprintf("%d rows, %v", n, sum)
	}
	return out
}

func sampleFiles(t *testing.T) []string {
	files, err := filepath.Glob("../bench/sample/*.json.gz")
	if err != nil || len(files) < 2 {
		t.Fatalf("bench/sample: %v %v", files, err)
	}
	// a memory snapshot named for rank 2: its tables and a snapshot-only ranks row
	snap := corpus.Path(t, "memsnap/magma27_memory_snapshot.json.gz")
	link := filepath.Join(t.TempDir(), "rank2_memory_snapshot.json.gz")
	if err := os.Symlink(must(filepath.Abs(snap)), link); err != nil {
		t.Fatal(err)
	}
	files = append(files, link)
	// and an Nsight Compute export: its metrics travel as kernel_metrics
	ncu := corpus.Glob(t, "ncu/CodeGandee*kernel_0005*.csv")
	if len(ncu) != 1 {
		t.Fatalf("corpus ncu/CodeGandee*kernel_0005*.csv: %d files, want 1", len(ncu))
	}
	files = append(files, ncu[0])
	return files
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The same files, published twice and ingested, give exactly the tables
// analyze gives: nothing lost, nothing twice.
func TestPipelineMatchesOffline(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(*testing.T) *duck.Store
	}{{"duckdb", openStore}, {"staged", openStaged}} {
		t.Run(tc.name, func(t *testing.T) { pipelineMatchesOffline(t, tc.open) })
	}
}

func pipelineMatchesOffline(t *testing.T, openOnline func(*testing.T) *duck.Store) {
	p := startPipe(t)
	files := sampleFiles(t)
	sent := p.publishFiles(t, "live", files)
	again := p.publishFiles(t, "live", files) // same ids: JetStream drops them
	if again != sent {
		t.Fatalf("second publish sent %d messages, first %d", again, sent)
	}
	info, err := p.stream.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if int64(info.State.Msgs) != sent {
		t.Fatalf("stream holds %d messages after publishing %d twice: dedup failed", info.State.Msgs, sent)
	}

	online := openOnline(t)
	p.consume(t, online, func(s *ingest.IngestStats) bool { return s.Messages.Load() == sent })
	offline := openStore(t)
	if _, err := ingest.Load(context.Background(), offline, files, ingest.Options{RunID: "live", Host: "node-1", Rank: -1}); err != nil {
		t.Fatal(err)
	}
	want, got := fingerprint(t, offline), fingerprint(t, online)
	for _, tbl := range pipelineTables {
		if got[tbl] != want[tbl] {
			t.Errorf("%s: online %s, offline %s", tbl, got[tbl], want[tbl])
		}
	}
	if strings.HasSuffix(files[len(files)-1], ".csv") && want["kernel_metrics"] == "0 rows, <nil>" {
		t.Fatalf("the ncu export loaded nothing: %v", want)
	}
	if want["slices_core"] == "0 rows, <nil>" || (len(files) > 2 && want["mem_segments"] == "0 rows, <nil>") {
		t.Fatalf("sample loaded nothing: %v", want)
	}
	if online.StagedDir() != "" { // the slices are in files, not in the database
		if n := countRows(t, online, "SELECT count(*) FROM slices_core_rows"); n != 0 {
			t.Errorf("%d slices_core rows in the database, want them all in files", n)
		}
		if n := countRows(t, online, "SELECT count(*) FROM staged_files WHERE run_id = 'live'"); n == 0 {
			t.Errorf("no staged files recorded under %s", online.StagedDir())
		}
	}

	// Every message delivered again (a new consumer from the start): all
	// are found in the ledger and skipped.
	if err := p.stream.DeleteConsumer(context.Background(), ingest.DefaultConsumer.Durable); err != nil {
		t.Fatal(err)
	}
	stats := p.consume(t, online, func(s *ingest.IngestStats) bool { return s.Duplicates.Load() == sent })
	if stats.Messages.Load() != 0 {
		t.Fatalf("redelivery inserted %d batches again", stats.Messages.Load())
	}
	if again := fingerprint(t, online); fmt.Sprint(again) != fmt.Sprint(got) {
		t.Fatalf("redelivery changed the tables:\n%v\n%v", again, got)
	}
}

// OnCommit hears of a commit before its messages are counted: whoever
// waits for the count (serve's tests, then moving the scheduler's clock)
// knows the scheduler has marked the run by then. Counted first, a
// loaded machine could run the waiter between the two, and the run was
// marked at the moved clock's time and never became quiet.
func TestOnCommitBeforeCounted(t *testing.T) {
	p := startPipe(t)
	sent := p.publishFiles(t, "live", sampleFiles(t))
	var mu sync.Mutex
	var seen []int64 // messages counted when OnCommit ran
	p.onCommit = func(s *ingest.IngestStats, runs map[string]bool) {
		mu.Lock()
		defer mu.Unlock()
		if !runs["live"] {
			t.Errorf("OnCommit heard of %v, not run live", runs)
		}
		seen = append(seen, s.Messages.Load())
	}
	p.consume(t, openStore(t), func(s *ingest.IngestStats) bool { return s.Messages.Load() == sent })
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("OnCommit never ran")
	}
	if last := seen[len(seen)-1]; last >= sent {
		t.Fatalf("the last commit's OnCommit ran with all %d messages already counted (%d)", sent, last)
	}
}

func openStore(t *testing.T) *duck.Store {
	t.Helper()
	st, err := duck.Open(context.Background(), "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Poison messages are terminated, counted and kept with their headers;
// good batches around them are ingested.
func TestPipelineRejectsPoison(t *testing.T) {
	p := startPipe(t)
	ctx := context.Background()
	steps := stepsRecord(t)
	defer steps.Release()
	good, err := transport.Encode("steps", steps)
	if err != nil {
		t.Fatal(err)
	}
	wrongTable, _ := transport.Encode("slices_core", steps) // valid Arrow, wrong columns
	unknown, _ := transport.Encode("no_such_table", steps)
	cases := []struct {
		name string
		data []byte
	}{
		{"garbage", []byte("this is not arrow")},
		{"empty", nil},
		{"wrong schema", wrongTable},
		{"unknown table", unknown},
		{"truncated", good[:len(good)/2]},
		{"good", good},
	}
	for i, c := range cases {
		m := nats.NewMsg(transport.Subject("default", "r", "h", "steps"))
		m.Data = c.data
		m.Header.Set(nats.MsgIdHdr, fmt.Sprintf("case-%d", i))
		m.Header.Set("Case", c.name)
		if _, err := p.js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	st := openStore(t)
	stats := p.consume(t, st, func(s *ingest.IngestStats) bool { return s.Messages.Load()+s.Rejected.Load() == int64(len(cases)) })
	if stats.Rejected.Load() != 5 || stats.Messages.Load() != 1 {
		t.Fatalf("rejected %d, ingested %d; want 5 and 1", stats.Rejected.Load(), stats.Messages.Load())
	}
	var n, rows int64
	if err := st.Conn().QueryRowContext(ctx, "SELECT count(*), (SELECT count(*) FROM steps) FROM rejected_batches WHERE headers LIKE '%Case%'").Scan(&n, &rows); err != nil {
		t.Fatal(err)
	}
	if n != 5 || rows != 2 {
		t.Fatalf("rejected_batches has %d rows, steps %d; want 5 and 2", n, rows)
	}
	// terminated: nothing is redelivered
	info, err := p.stream.Consumer(ctx, ingest.DefaultConsumer.Durable)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := info.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.NumAckPending != 0 || ci.NumPending != 0 {
		t.Fatalf("consumer still has %d pending acks, %d pending", ci.NumAckPending, ci.NumPending)
	}
}

func stepsRecord(t *testing.T) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, stream.StepsSchema)
	defer b.Release()
	for i := range 2 {
		b.Field(0).(*array.BinaryDictionaryBuilder).AppendString("r")
		b.Field(1).(*array.Int32Builder).Append(0)
		b.Field(2).(*array.Int32Builder).Append(int32(i))
		b.Field(3).(*array.Int64Builder).Append(int64(i) * 100)
		b.Field(4).(*array.Int64Builder).Append(int64(i)*100 + 90)
	}
	return b.NewRecordBatch()
}

// Restart the embedded NATS server mid-stream (same port, same storage):
// the publisher and the consumer reconnect, and every row arrives once.
func TestPipelineSurvivesNATSRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a server")
	}
	dir := t.TempDir()
	srv, err := transport.StartEmbedded(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().String()
	nc, err := transport.Connect(transport.NATSConfig{URL: srv.URL()}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := transport.EnsureStream(ctx, js, transport.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ingest.DefaultConsumer
	cfg.MaxWait, cfg.FetchBytes, cfg.AckWait = 50*time.Millisecond, 1<<20, 2*time.Second
	cons, err := ingest.NewConsumer(ctx, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	c := &ingest.Consumer{St: st, Mu: &sync.Mutex{}, Cons: cons, Cfg: cfg, Stats: &ingest.IngestStats{}, Logf: t.Logf}
	consumed := make(chan error, 1)
	go func() { consumed <- c.Run(ctx) }()

	files := sampleFiles(t)[:2]
	pcfg := transport.DefaultPublisher
	pcfg.MessageBytes = 64 << 10
	pub, err := transport.NewPublisher(nc, transport.DefaultStream, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	runs := []string{"n0", "n1", "n2", "n3", "n4", "n5"}
	published := make(chan error, 1)
	go func() {
		for _, r := range runs {
			sink := &ingest.PublishSink{P: pub, RunID: r, Host: "node-1"}
			if _, err := ingest.Read(ctx, sink, files, ingest.Options{RunID: r, Host: "node-1", Rank: -1}); err != nil {
				published <- err
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		published <- pub.Close(ctx)
	}()
	time.Sleep(250 * time.Millisecond)
	srv.Stop()
	t.Logf("server stopped after %d batches committed", c.Stats.Messages.Load())
	time.Sleep(500 * time.Millisecond)
	srv, err = transport.StartEmbedded(dir, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	want := openStore(t)
	for _, r := range runs {
		if _, err := ingest.Load(ctx, want, files, ingest.Options{RunID: r, Host: "node-1", Rank: -1}); err != nil {
			t.Fatal(err)
		}
	}
	wantFP := fingerprint(t, want)
	deadline := time.Now().Add(60 * time.Second)
	for {
		c.Mu.Lock()
		got := fingerprint(t, st)
		c.Mu.Unlock()
		if fmt.Sprint(got) == fmt.Sprint(wantFP) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart the tables never matched:\ngot  %v\nwant %v", got, wantFP)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("publisher retried %d messages; consumer skipped %d duplicates", pub.Stats.Retries.Load(), c.Stats.Duplicates.Load())
	cancel()
	<-consumed
}
