package ingest_test

import (
	"context"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream/transport"
)

// A run whose traces are read in two passes, their rows inserted chunk by
// chunk, stores exactly the rows of the same run read whole: every table,
// row for row (a hash of each table's rows, and their count).
func TestLoadInTwoPasses(t *testing.T) {
	defer func(n int64, c int) { *ingest.TwoPassBytes, *ingest.TwoPassChunkRows = n, c }(*ingest.TwoPassBytes, *ingest.TwoPassChunkRows)
	*ingest.TwoPassChunkRows = 1000 // every trace in several chunks
	ctx := context.Background()
	files, err := ingest.Discover([]string{"../bench/sample"})
	if err != nil {
		t.Fatal(err)
	}
	// a second run: a trace with NCCL collectives and their process groups
	nccl := corpus.Glob(t, "kineto/hta/tests__data__nccl_parser_config__*.json.gz")
	if len(nccl) == 0 {
		t.Fatal("no corpus trace kineto/hta/tests__data__nccl_parser_config__*.json.gz")
	}
	digest := func(twoPass int64) map[string][2]string {
		*ingest.TwoPassBytes = twoPass
		st := openStore(t)
		if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: "r", Rank: -1}); err != nil {
			t.Fatal(err)
		}
		if _, err := ingest.Load(ctx, st, nccl, ingest.Options{RunID: "n", Rank: -1}); err != nil {
			t.Fatal(err)
		}
		out := map[string][2]string{}
		for _, tbl := range duck.RunTables {
			var n, h string
			q := "SELECT count(*)::VARCHAR, coalesce(sum(hash(t))::VARCHAR, '') FROM " + tbl + " t"
			if err := st.Conn().QueryRowContext(ctx, q).Scan(&n, &h); err != nil {
				t.Fatal(err)
			}
			out[tbl] = [2]string{n, h}
		}
		return out
	}
	whole, twice := digest(0), digest(1)
	// published in two passes (one artifact, its messages numbered on
	// across the chunks: none may be taken for a duplicate) and ingested
	*ingest.TwoPassBytes = 1
	p := startPipe(t)
	pub, err := transport.NewPublisher(p.nc, p.sc, transport.DefaultPublisher)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		id    string
		files []string
	}{{"r", files}, {"n", nccl}} {
		sink := &ingest.PublishSink{P: pub, RunID: run.id}
		if _, err := ingest.Read(ctx, sink, run.files, ingest.Options{RunID: run.id, Rank: -1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	live := openStore(t)
	sent := pub.Stats.Messages.Load()
	p.consume(t, live, func(s *ingest.IngestStats) bool { return s.Messages.Load() == sent })
	for _, tbl := range []string{"slices_core", "slices_detail", "stacks", "ranks"} {
		var n string
		if err := live.Conn().QueryRowContext(ctx, "SELECT count(*)::VARCHAR FROM "+tbl).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != whole[tbl][0] {
			t.Errorf("%s: %s rows published in two passes, %s read whole", tbl, n, whole[tbl][0])
		}
	}
	for tbl, w := range whole {
		if twice[tbl] != w {
			t.Errorf("%s: %v rows/hash read in two passes, %v read whole", tbl, twice[tbl], w)
		}
	}
	if whole["slices_core"][0] == "0" || whole["slices_detail"][0] == "0" || whole["stacks"][0] == "0" {
		t.Errorf("nothing to compare: %v", whole)
	}
}
