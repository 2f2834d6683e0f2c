// Command pipeline measures the always-on path end to end on one machine:
// trace batches published to an embedded JetStream server (file storage),
// pulled by the ingestor and committed to a DuckDB file. It reports
// events/s from first publish to last commit, per-stage times, and the
// publish-to-queryable latency of every batch (p50, p99, max).
//
//	go run -tags duckdb_arrow ./bench/pipeline -traces bench/sample -copies 200
//
// The traces are read once; each copy republishes their batches as a new
// producer (new message ids), so nothing is deduplicated.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

func main() {
	traces := flag.String("traces", "bench/sample", "folder of traces to publish")
	copies := flag.Int("copies", 100, "times to publish them")
	msgBytes := flag.Int("message-bytes", 512<<10, "target message size")
	fetchBytes := flag.Int("fetch-bytes", 16<<20, "bytes per pull")
	dir := flag.String("dir", "", "work folder (default: a temp folder, removed after)")
	rate := flag.Float64("rate", 0, "publish at about this many events/s (0: as fast as possible)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile here")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(*traces, *copies, *msgBytes, *fetchBytes, *dir, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(traces string, copies, msgBytes, fetchBytes int, dir string, rate float64) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if dir == "" {
		d, err := os.MkdirTemp("", "trainscope-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	files, err := ingest.Discover([]string{traces})
	if err != nil {
		return err
	}
	var c ingest.Collect
	if _, err := ingest.Read(ctx, &c, files, ingest.Options{RunID: "bench", Host: "node-1", Rank: -1}); err != nil {
		return err
	}
	var rowsPerCopy int64
	for _, b := range c.Batches {
		rowsPerCopy += b.Rec.NumRows()
	}

	srv, err := stream.StartEmbedded(filepath.Join(dir, "js"), "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer srv.Stop()
	nc, err := stream.Connect(stream.NATSConfig{URL: srv.URL()}, "bench")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	sc := stream.DefaultStream
	s, err := stream.EnsureStream(ctx, js, sc)
	if err != nil {
		return err
	}
	dbPath := filepath.Join(dir, "bench.duckdb")
	if os.Getenv("BENCH_MEM") != "" {
		dbPath = ""
	}
	st, err := duck.Open(ctx, dbPath, duck.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	if x := os.Getenv("BENCH_SQL"); x != "" {
		if err := st.Exec(ctx, x); err != nil {
			return err
		}
	}
	ccfg := ingest.DefaultConsumer
	ccfg.FetchBytes = fetchBytes
	cons, err := ingest.NewConsumer(ctx, s, ccfg)
	if err != nil {
		return err
	}
	stats := &ingest.IngestStats{}
	consumer := &ingest.Consumer{St: st, Mu: &sync.Mutex{}, Cons: cons, Cfg: ccfg, Stats: stats}
	go consumer.Run(ctx)

	pcfg := stream.DefaultPublisher
	pcfg.MessageBytes = msgBytes
	pub, err := stream.NewPublisher(nc, sc, pcfg)
	if err != nil {
		return err
	}
	t0 := time.Now()
	var sent int64
	for i := range copies {
		pub.Begin(fmt.Sprintf("bench-%d", i))
		for _, b := range c.Batches {
			if rate > 0 { // pace: hold each batch until its time at the given rate
				if ahead := time.Duration(float64(sent)/rate*1e9) - time.Since(t0); ahead > 0 {
					time.Sleep(ahead)
				}
			}
			if err := pub.Publish(ctx, "bench", "node-1", b.Table, b.Rec); err != nil {
				return err
			}
			sent += b.Rec.NumRows()
		}
	}
	if err := pub.Close(ctx); err != nil {
		return err
	}
	tPub := time.Since(t0)
	want := pub.Stats.Messages.Load()
	for stats.Messages.Load() < want {
		time.Sleep(2 * time.Millisecond)
	}
	total := time.Since(t0)
	rows := stats.Rows.Load()

	var p50, p99, pmax float64
	if err := st.Conn().QueryRowContext(ctx, `SELECT quantile_cont(ingested_ns - sent_ns, 0.5) / 1e6,
		quantile_cont(ingested_ns - sent_ns, 0.99) / 1e6, max(ingested_ns - sent_ns) / 1e6 FROM ingested_batches`).Scan(&p50, &p99, &pmax); err != nil {
		return err
	}
	fmt.Printf("input: %s, %d rows per copy, %d copies\n", traces, rowsPerCopy, copies)
	fmt.Printf("messages: %d (%.1f MB, %.0f KiB mean), %d commits\n", want, float64(pub.Stats.Bytes.Load())/1e6,
		float64(pub.Stats.Bytes.Load())/float64(want)/1024, stats.Commits.Load())
	fmt.Printf("end to end: %d events in %s = %.2fM events/s (%.0f MB/s of messages)\n", rows, total.Round(time.Millisecond),
		float64(rows)/total.Seconds()/1e6, float64(pub.Stats.Bytes.Load())/total.Seconds()/1e6)
	fmt.Printf("publish side: %s for all messages (encode %s of it), %d retries\n", tPub.Round(time.Millisecond),
		time.Duration(pub.Stats.Encode.Load()).Round(time.Millisecond), pub.Stats.Retries.Load())
	fmt.Printf("ingest side: decode %s, transactions %s\n", time.Duration(stats.Decode.Load()).Round(time.Millisecond),
		time.Duration(stats.Insert.Load()).Round(time.Millisecond))
	fmt.Printf("publish -> queryable latency per batch: p50 %.0f ms, p99 %.0f ms, max %.0f ms\n", p50, p99, pmax)
	return nil
}
