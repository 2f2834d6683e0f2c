package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// oracleRanks is how ranks rows were inserted before insertRanks picked
// them in Go: four statements over a temporary table. The test holds the
// two to the same rows.
func oracleRanks(ctx context.Context, st *duck.Store, recs []arrow.RecordBatch) error {
	for _, q := range []string{
		"CREATE TEMP TABLE IF NOT EXISTS ranks_incoming AS SELECT * FROM ranks LIMIT 0",
		"DELETE FROM ranks_incoming",
	} {
		if err := st.Exec(ctx, q); err != nil {
			return err
		}
	}
	// the Arrow stream, not the appender: a temporary table
	for _, r := range recs {
		if err := st.Exec(ctx, "INSERT INTO ranks_incoming (run_id, rank, host, source, rank_source) VALUES (?, ?, ?, ?, ?)",
			r.Column(0).ValueStr(0), r.Column(1).ValueStr(0), r.Column(2).ValueStr(0), r.Column(3).ValueStr(0), nullable(r.Column(4).ValueStr(0))); err != nil {
			return err
		}
	}
	for _, q := range []string{
		`DELETE FROM ranks USING ranks_incoming i WHERE ranks.run_id = i.run_id AND ranks.rank = i.rank
		   AND ranks.rank_source = 'snapshot' AND i.rank_source IS DISTINCT FROM 'snapshot'`,
		`INSERT OR IGNORE INTO ranks SELECT * FROM ranks_incoming
		   QUALIFY row_number() OVER (PARTITION BY run_id, rank ORDER BY rank_source = 'snapshot', source) = 1`,
	} {
		if err := st.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

func nullable(s string) any {
	if s == "(null)" {
		return nil
	}
	return s
}

// randomRanks is n one-row ranks batches over two runs and three ranks,
// each a trace's, a snapshot's or of unknown source; sources are unique,
// so that one row is first for a rank whatever the order.
func randomRanks(r *rand.Rand, n int, seq *int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for range n {
		*seq++
		row := stream.RankRow{RunID: []string{"run-a", "run-b"}[r.IntN(2)], Rank: int32(r.IntN(3)), Host: "h",
			Source: fmt.Sprintf("s%03d", r.IntN(1000)*1000+*seq), RankSource: []string{"", "trace", stream.RankFromSnapshot}[r.IntN(3)]}
		out = append(out, stream.RanksRecord([]stream.RankRow{row}))
	}
	return out
}

func ranksRows(t *testing.T, st *duck.Store) string {
	t.Helper()
	rows, err := st.Query(context.Background(), "SELECT run_id, rank, source, coalesce(rank_source, '-') FROM ranks ORDER BY ALL")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var run, src, rs string
		var rank int
		if err := rows.Scan(&run, &rank, &src, &rs); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s/%d %s %s", run, rank, src, rs))
	}
	return strings.Join(out, "\n")
}

// runLines is the lines of rows (from ranksRows) of run.
func runLines(rows, run string) string {
	var out []string
	for _, l := range strings.Split(rows, "\n") {
		if strings.HasPrefix(l, run+"/") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// insertRanks keeps the rows the statements it replaced kept, over random
// commits of traces' and snapshots' rows, some of ranks already stored.
func TestInsertRanksAsBefore(t *testing.T) {
	ctx := context.Background()
	open := func() *duck.Store {
		st, err := duck.Open(ctx, "", duck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 7))
		got, want := open(), open()
		seq := 0
		for commit := range 1 + r.IntN(4) {
			recs := randomRanks(r, 1+r.IntN(6), &seq)
			before := ranksRows(t, got)
			changed, err := (StoreSink{got}).insertRanks(ctx, recs)
			if err != nil {
				t.Fatalf("seed %d commit %d: %v", seed, commit, err)
			}
			// the runs said changed are those whose rows did
			after := ranksRows(t, got)
			for _, run := range []string{"run-a", "run-b"} {
				if did := runLines(before, run) != runLines(after, run); changed[run] != did {
					t.Fatalf("seed %d commit %d: %s reported changed %v; its rows went\n%s\nto\n%s", seed, commit, run, changed[run], before, after)
				}
			}
			if err := oracleRanks(ctx, want, recs); err != nil {
				t.Fatalf("seed %d commit %d: oracle: %v", seed, commit, err)
			}
			for _, rec := range recs {
				rec.Release()
			}
			if g, w := ranksRows(t, got), ranksRows(t, want); g != w {
				t.Fatalf("seed %d commit %d: ranks\n%s\nwant\n%s", seed, commit, g, w)
			}
		}
		got.Close()
		want.Close()
	}
}

// The rows kept come from the batches whole: every column, and rows of
// one batch not in order of their ranks.
func TestInsertRanksKeepsWholeRows(t *testing.T) {
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := stream.RanksRecord([]stream.RankRow{
		{RunID: "r", Rank: 1, Host: "h1", Source: "b", RankSource: "distributedInfo", GPUName: "NVIDIA H100", WorldSize: 4, EndNS: 9},
		{RunID: "r", Rank: 0, Host: "h0", Source: "a", RankSource: "distributedInfo", GPUName: "NVIDIA H100", WorldSize: 4, Complete: true},
		{RunID: "r", Rank: 1, Host: "h9", Source: "a", RankSource: stream.RankFromSnapshot},
	})
	defer rec.Release()
	if _, err := (StoreSink{st}).insertRanks(ctx, []arrow.RecordBatch{rec}); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Query(ctx, "SELECT rank, host, source, gpu_name, world_size, coalesce(end_ns, -1), coalesce(complete, false) FROM ranks ORDER BY rank")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var rank, ws int
		var host, src, gpu string
		var end int64
		var complete bool
		if err := rows.Scan(&rank, &host, &src, &gpu, &ws, &end, &complete); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %s %s %s %d %d %v", rank, host, src, gpu, ws, end, complete))
	}
	want := []string{"0 h0 a NVIDIA H100 4 0 true", "1 h1 b NVIDIA H100 4 9 false"}
	if !slices.Equal(got, want) {
		t.Errorf("ranks %q, want %q", got, want)
	}
}
