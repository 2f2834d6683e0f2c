package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/trainscope/trainscope/stream"
)

// rankKey is a ranks row's key.
type rankKey struct {
	run  string
	rank int32
}

// rankPick is the incoming row kept for a rank: batch rec, row row.
type rankPick struct {
	rec, row int
	order    int // 0: a trace's, 1: a snapshot's, 2: rank_source unknown
	source   string
	// nonSnapshot: some incoming row of the rank is not a snapshot's
	nonSnapshot bool
}

// insertRanks adds ranks rows: one row per rank, a trace's before a
// snapshot's (then by source); a trace's row replaces a snapshot-only
// row of its rank already stored, and a row for a rank that has one is
// ignored. The rows are picked here, against the stored rows of their
// runs, and appended: a temporary table and five statements cost a
// commit of many small traces 15 ms (bench/tmp/r64 x 16 drained: 1 s of
// its 4 s). It reports the runs whose ranks rows changed: only their
// runs rows need to be made again (a rank's next traces, which a
// long-running job's agents publish every window, change nothing).
func (s StoreSink) insertRanks(ctx context.Context, recs []arrow.RecordBatch) (changed map[string]bool, err error) {
	picks := map[rankKey]*rankPick{}
	var keys []rankKey
	runs := map[string]bool{}
	for ri, rec := range recs {
		cols, err := rankColumns(rec)
		if err != nil {
			return nil, fmt.Errorf("insert into ranks: %w", err)
		}
		for i := range int(rec.NumRows()) {
			k := rankKey{cols.run.Value(i), cols.rank.Value(i)}
			p := rankPick{rec: ri, row: i, order: 2, source: cols.source.Value(i)}
			if cols.rankSource.IsValid(i) {
				p.order = 0
				if cols.rankSource.Value(i) == stream.RankFromSnapshot {
					p.order = 1
				}
			}
			p.nonSnapshot = p.order != 1
			old := picks[k]
			switch {
			case old == nil:
				picks[k] = &p
				keys = append(keys, k)
				runs[k.run] = true
				continue
			case p.order < old.order || p.order == old.order && p.source < old.source:
				p.nonSnapshot = p.nonSnapshot || old.nonSnapshot
				*old = p
			default:
				old.nonSnapshot = old.nonSnapshot || p.nonSnapshot
			}
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	stored, err := s.storedRanks(ctx, runs)
	if err != nil {
		return nil, fmt.Errorf("insert into ranks: %w", err)
	}
	changed = map[string]bool{}
	var replace []any
	byRec := make([][]int, len(recs))
	for _, k := range keys {
		p := picks[k]
		if snapshot, ok := stored[k]; ok {
			if !snapshot || !p.nonSnapshot {
				continue // the rank has its row
			}
			replace = append(replace, k.run, k.rank)
		}
		byRec[p.rec] = append(byRec[p.rec], p.row)
		changed[k.run] = true
	}
	if len(replace) > 0 {
		q := "DELETE FROM ranks WHERE rank_source = 'snapshot' AND (run_id, rank) IN (" +
			strings.TrimSuffix(strings.Repeat("(?, ?), ", len(replace)/2), ", ") + ")"
		if err := s.St.Exec(ctx, q, replace...); err != nil {
			return nil, fmt.Errorf("insert into ranks: %w", err)
		}
	}
	var rows []arrow.RecordBatch
	defer func() {
		for _, r := range rows {
			r.Release()
		}
	}()
	for ri, idx := range byRec {
		slices.Sort(idx)
		rows = appendRuns(rows, recs[ri], idx)
	}
	if len(rows) == 0 {
		return changed, nil
	}
	return changed, s.St.InsertAll(ctx, "ranks", rows)
}

// rankCols are the columns of a ranks batch insertRanks reads.
type rankCols struct {
	run, source, rankSource *array.String
	rank                    *array.Int32
}

// rankColumns finds them in rec by name.
func rankColumns(rec arrow.RecordBatch) (rankCols, error) {
	var c rankCols
	var ok [4]bool
	for i, f := range rec.Schema().Fields() {
		switch f.Name {
		case "run_id":
			c.run, ok[0] = rec.Column(i).(*array.String)
		case "source":
			c.source, ok[1] = rec.Column(i).(*array.String)
		case "rank_source":
			c.rankSource, ok[2] = rec.Column(i).(*array.String)
		case "rank":
			c.rank, ok[3] = rec.Column(i).(*array.Int32)
		}
	}
	if ok != [4]bool{true, true, true, true} {
		return c, fmt.Errorf("a ranks batch without string run_id, source and rank_source and an int32 rank: %s", rec.Schema())
	}
	return c, nil
}

// storedRanks maps every stored rank of runs to whether its row is a
// snapshot's.
func (s StoreSink) storedRanks(ctx context.Context, runs map[string]bool) (map[rankKey]bool, error) {
	args := make([]any, 0, len(runs))
	for r := range runs {
		args = append(args, r)
	}
	rows, err := s.St.Query(ctx, "SELECT run_id, rank, rank_source IS NOT DISTINCT FROM 'snapshot' FROM ranks WHERE run_id IN (?"+strings.Repeat(", ?", len(args)-1)+")", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[rankKey]bool{}
	for rows.Next() {
		var k rankKey
		var snapshot bool
		if err := rows.Scan(&k.run, &k.rank, &snapshot); err != nil {
			return nil, err
		}
		out[k] = snapshot
	}
	return out, rows.Err()
}

// appendRuns appends to out the rows idx (ascending) of rec, as slices of
// rec, one per run of consecutive rows.
func appendRuns(out []arrow.RecordBatch, rec arrow.RecordBatch, idx []int) []arrow.RecordBatch {
	for i := 0; i < len(idx); {
		j := i + 1
		for j < len(idx) && idx[j] == idx[j-1]+1 {
			j++
		}
		out = append(out, rec.NewSlice(int64(idx[i]), int64(idx[j-1]+1)))
		i = j
	}
	return out
}
