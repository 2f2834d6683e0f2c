// Command pipeline measures the always-on path end to end on one machine:
// trace batches published to an embedded JetStream server (file storage),
// pulled by the ingestor and committed to a DuckDB file. It reports
// events/s from first publish to last commit, per-stage times, and the
// publish-to-queryable latency of every batch (p50, p99, max).
//
//	go run -tags duckdb_arrow ./bench/pipeline -traces bench/sample -copies 200
//
// With -ingestors N the stream is partitioned (-partitions, default 8) and
// N ingestors share it as several 'trainscope serve' processes do
// (ingest.Coordinator), each with its own DuckDB; each copy is then a run
// of its own, so that the runs spread over the partitions.
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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream/transport"
)

func main() {
	traces := flag.String("traces", "bench/sample", "folder of traces to publish")
	copies := flag.Int("copies", 100, "times to publish them")
	msgBytes := flag.Int("message-bytes", 512<<10, "target message size")
	fetchBytes := flag.Int("fetch-bytes", 16<<20, "bytes per pull")
	dir := flag.String("dir", "", "work folder (default: a temp folder, removed after)")
	rate := flag.Float64("rate", 0, "publish at about this many events/s (0: as fast as possible)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile here")
	ingestors := flag.Int("ingestors", 0, "ingestors sharing a partitioned stream (0: one, unpartitioned)")
	partitions := flag.Int("partitions", 8, "the stream's partitions with -ingestors")
	distinct := flag.Bool("distinct-runs", false, "each copy a run of its own (always so with -ingestors)")
	flag.StringVar(&checkpointWAL, "checkpoint-wal", "256MB", "the ingestor's serve.checkpoint_wal (\"\": never checkpoint before the end)")
	flag.BoolVar(&staged, "staged", true, "ingestors keep slices as Parquet files beside their database (serve.staged, the default; -staged=false: in DuckDB)")
	flag.BoolVar(&drain, "drain", false, "publish everything first, then start one ingestor and time how fast it drains the stream\n(the fleet's case: publishers on other machines)")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(*traces, *copies, *msgBytes, *fetchBytes, *dir, *rate, *ingestors, *partitions, *distinct || *ingestors > 0); err != nil {
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// drain: publish first, then time one ingestor alone on the backlog.
var drain bool

// staged is the ingestors' duck.Options.Staged.
var staged bool

// checkpointWAL is the ingestors' duck.Options.CheckpointWAL, as serve's.
var checkpointWAL string

func run(traces string, copies, msgBytes, fetchBytes int, dir string, rate float64, ingestors, partitions int, distinct bool) error {
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

	srv, err := transport.StartEmbedded(filepath.Join(dir, "js"), "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer srv.Stop()
	nc, err := transport.Connect(transport.NATSConfig{URL: srv.URL()}, "bench")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	sc := transport.DefaultStream
	if ingestors > 0 {
		sc.Partitions = partitions
	}
	s, err := transport.EnsureStream(ctx, js, sc)
	if err != nil {
		return err
	}
	ccfg := ingest.DefaultConsumer
	ccfg.FetchBytes = fetchBytes
	var stores []*duck.Store
	var statsAll []*ingest.IngestStats
	if drain && ingestors > 0 {
		return fmt.Errorf("-drain times one ingestor: leave -ingestors out")
	}
	startOne := func() error {
		st, stats, err := startIngestor(ctx, dir, "bench", s, nil, ccfg)
		if err != nil {
			return err
		}
		stores, statsAll = append(stores, st), append(statsAll, stats)
		return nil
	}
	if ingestors <= 0 && !drain {
		if err := startOne(); err != nil {
			return err
		}
	} else if ingestors > 0 {
		var cos []*ingest.Coordinator
		for k := range ingestors {
			c := ccfg
			c.Member = fmt.Sprintf("ing-%d", k)
			co := &ingest.Coordinator{JS: js, Stream: s, SCfg: sc, Cfg: c, Member: c.Member, Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, c.Member+": "+f+"\n", a...) }}
			st, stats, err := startIngestor(ctx, dir, c.Member, s, co, c)
			if err != nil {
				return err
			}
			stores, statsAll, cos = append(stores, st), append(statsAll, stats), append(cos, co)
		}
		// publish once the partitions are spread
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			spread := true
			for _, co := range cos {
				spread = spread && len(co.Owned()) >= partitions/ingestors
			}
			if spread {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the partitions did not spread over %d ingestors in a minute", ingestors)
			}
		}
	}
	for _, st := range stores {
		defer st.Close()
	}
	committed := func() (msgs, rows, commits int64, decode, insert time.Duration) {
		for _, x := range statsAll {
			msgs += x.Messages.Load()
			rows += x.Rows.Load()
			commits += x.Commits.Load()
			decode += time.Duration(x.Decode.Load())
			insert += time.Duration(x.Insert.Load())
		}
		return
	}

	pcfg := transport.DefaultPublisher
	pcfg.MessageBytes = msgBytes
	pub, err := transport.NewPublisher(nc, sc, pcfg)
	if err != nil {
		return err
	}
	t0 := time.Now()
	var sent int64
	for i := range copies {
		pub.Begin(fmt.Sprintf("bench-%d", i))
		runID := "bench"
		if distinct {
			runID = fmt.Sprintf("bench-%d", i)
		}
		for _, b := range c.Batches {
			if rate > 0 { // pace: hold each batch until its time at the given rate
				if ahead := time.Duration(float64(sent)/rate*1e9) - time.Since(t0); ahead > 0 {
					time.Sleep(ahead)
				}
			}
			rec := b.Rec
			if runID != "bench" {
				rec = withRun(rec, runID)
			}
			err := pub.Publish(ctx, runID, "node-1", b.Table, rec)
			if rec != b.Rec {
				rec.Release()
			}
			if err != nil {
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
	if drain {
		t0 = time.Now()
		if err := startOne(); err != nil {
			return err
		}
		defer stores[0].Close()
	}
	for last := time.Now(); ; time.Sleep(2 * time.Millisecond) {
		msgs, _, _, _, _ := committed()
		if msgs >= want {
			break
		}
		if time.Since(last) > 5*time.Second {
			fmt.Fprintf(os.Stderr, "waiting: %d of %d messages committed\n", msgs, want)
			last = time.Now()
		}
	}
	total := time.Since(t0)
	_, rows, commits, decode, insert := committed()
	var wal int64 // what a restart would replay
	for _, st := range stores {
		if fi, err := os.Stat(st.Path + ".wal"); err == nil {
			wal += fi.Size()
		}
	}
	cancel() // stop the ingestors before reading their ledgers

	// latency over every ingestor's ledger
	var lat []float64 // ms
	var perIngestor []string
	for _, st := range stores {
		rows, err := st.Query(context.Background(), "SELECT (ingested_ns - sent_ns) / 1e6 FROM ingested_batches")
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			var ms float64
			if err := rows.Scan(&ms); err != nil {
				rows.Close()
				return err
			}
			lat = append(lat, ms)
			n++
		}
		rows.Close()
		perIngestor = append(perIngestor, fmt.Sprint(n))
	}
	slices.Sort(lat)
	p50, p99, pmax := quantile(lat, 0.5), quantile(lat, 0.99), quantile(lat, 1)
	fmt.Printf("input: %s, %d rows per copy, %d copies\n", traces, rowsPerCopy, copies)
	fmt.Printf("messages: %d (%.1f MB, %.0f KiB mean), %d commits; batches per ingestor: %s\n", want, float64(pub.Stats.Bytes.Load())/1e6,
		float64(pub.Stats.Bytes.Load())/float64(want)/1024, commits, strings.Join(perIngestor, ", "))
	fmt.Printf("end to end: %d events in %s = %.2fM events/s (%.0f MB/s of messages)\n", rows, total.Round(time.Millisecond),
		float64(rows)/total.Seconds()/1e6, float64(pub.Stats.Bytes.Load())/total.Seconds()/1e6)
	fmt.Printf("publish side: %s for all messages (encode %s of it), %d retries\n", tPub.Round(time.Millisecond),
		time.Duration(pub.Stats.Encode.Load()).Round(time.Millisecond), pub.Stats.Retries.Load())
	fmt.Printf("ingest side (summed over ingestors): decode %s, transactions %s\n", decode.Round(time.Millisecond),
		insert.Round(time.Millisecond))
	if st := stores[0]; st.Path != "" {
		fmt.Printf("write-ahead log at the end (what a restart replays): %.1f MB\n", float64(wal)/1e6)
	}
	fmt.Printf("publish -> queryable latency per batch: p50 %.0f ms, p99 %.0f ms, max %.0f ms\n", p50, p99, pmax)
	return nil
}

// startIngestor opens an ingestor's DuckDB under dir and starts consuming:
// the whole stream, or with co its share of the partitions.
func startIngestor(ctx context.Context, dir, name string, s jetstream.Stream, co *ingest.Coordinator, ccfg ingest.ConsumerConfig) (*duck.Store, *ingest.IngestStats, error) {
	dbPath := filepath.Join(dir, name+".duckdb")
	if os.Getenv("BENCH_MEM") != "" {
		dbPath = ""
	}
	st, err := duck.Open(ctx, dbPath, duck.Options{CheckpointWAL: checkpointWAL, Staged: staged})
	if err != nil {
		return nil, nil, err
	}
	if x := os.Getenv("BENCH_SQL"); x != "" {
		if err := st.Exec(ctx, x); err != nil {
			return nil, nil, err
		}
	}
	stats := &ingest.IngestStats{}
	mu := &sync.Mutex{}
	if co == nil {
		cons, err := ingest.NewConsumer(ctx, s, ccfg)
		if err != nil {
			return nil, nil, err
		}
		consumer := &ingest.Consumer{St: st, Mu: mu, Cons: cons, Cfg: ccfg, Stats: stats,
			Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, name+": "+f+"\n", a...) }}
		go consumer.Run(ctx)
		return st, stats, nil
	}
	co.New = func() *ingest.Consumer {
		return &ingest.Consumer{St: st, Mu: mu, Cfg: ccfg, Stats: stats, Logf: co.Logf}
	}
	if err := co.Start(ctx); err != nil {
		return nil, nil, err
	}
	go co.Run(ctx, nil)
	return st, stats, nil
}

// withRun is rec with every row's run_id set to run (a plain or a
// dictionary string column).
func withRun(rec arrow.RecordBatch, run string) arrow.RecordBatch {
	idx := rec.Schema().FieldIndices("run_id")
	if len(idx) == 0 {
		rec.Retain()
		return rec
	}
	n := int(rec.NumRows())
	cols := make([]arrow.Array, rec.NumCols())
	for i := range cols {
		cols[i] = rec.Column(i)
	}
	var col arrow.Array
	switch dt := rec.Schema().Field(idx[0]).Type.(type) {
	case *arrow.DictionaryType:
		// one dictionary entry, every index 0: no per-row hashing
		db := array.NewStringBuilder(memory.DefaultAllocator)
		db.Append(run)
		dict := db.NewArray()
		db.Release()
		zeros := array.NewInt32Builder(memory.DefaultAllocator)
		zeros.AppendValues(make([]int32, n), nil)
		ix := zeros.NewArray()
		zeros.Release()
		col = array.NewDictionaryArray(dt, ix, dict)
		ix.Release()
		dict.Release()
	default:
		sb := array.NewStringBuilder(memory.DefaultAllocator)
		for range n {
			sb.Append(run)
		}
		col = sb.NewArray()
		sb.Release()
	}
	cols[idx[0]] = col
	out := array.NewRecordBatch(rec.Schema(), cols, int64(n))
	col.Release()
	return out
}

// quantile of sorted values, interpolated between the two nearest (as
// DuckDB's quantile_cont).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (pos-float64(lo))*(sorted[lo+1]-sorted[lo])
}
