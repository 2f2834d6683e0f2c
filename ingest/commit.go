package ingest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/trainscope/trainscope/stream/transport"
)

// The consumer's transaction: a fetch's rows, their ledger rows and the
// rejections, committed together (see Consumer).

// commit inserts the new batches, their ledger rows and the rejections in
// one transaction and returns the runs it touched (true: a ranks row came).
func (c *Consumer) commit(ctx context.Context, items []*item) (map[string]bool, error) {
	runs := map[string]bool{}
	var staged []*stagedFile
	c.found = c.found[:0]
	err := c.St.Tx(ctx, func() error {
		if err := c.markSeen(ctx, items); err != nil {
			return err
		}
		// a staged store's bulk tables go to Parquet files, written while
		// DuckDB takes the other tables' rows, and recorded with the ledger
		// rows below; nothing returns before the writers are done
		written := func() error { return nil }
		if c.St.StagedDir() != "" {
			staged = stageFiles(c.St, items)
			done := make(chan error, 1)
			go func() { done <- writeStaged(ctx, c.St.StagedDir(), staged, c.Workers) }()
			written = sync.OnceValue(func() error { return <-done })
			defer written()
		}
		// one insert per table, in first-seen order, ranks last
		var order []string
		byTable := map[string][]arrow.RecordBatch{}
		for _, it := range items {
			if it.poison != nil || it.skipped {
				continue
			}
			if _, ok := byTable[it.table]; !ok {
				order = append(order, it.table)
			}
			byTable[it.table] = append(byTable[it.table], it.rec)
			// counters alone do not make a run due: an agent samples them
			// all the time, and a run's next pass reads what came
			if it.run != "" && it.table != "counters" {
				runs[it.run] = runs[it.run] || it.table == "ranks"
			}
		}
		sort.SliceStable(order, func(i, j int) bool { return order[j] == "ranks" && order[i] != "ranks" })
		sink := StoreSink{c.St}
		var changed map[string]bool // runs whose ranks rows changed
		for _, t := range order {
			if c.St.Staged(t) {
				continue // staged above
			}
			var err error
			if t == "ranks" {
				changed, err = sink.insertRanks(ctx, byTable[t])
			} else {
				err = c.St.InsertAll(ctx, t, byTable[t])
			}
			if err != nil {
				return err // it names the table
			}
		}
		var ranked []string
		for run, r := range runs {
			if r && changed[run] {
				ranked = append(ranked, run)
			}
		}
		sort.Strings(ranked)
		if err := RefreshRuns(ctx, c.St, ranked...); err != nil {
			return err
		}
		if err := written(); err != nil {
			return err
		}
		if err := recordStaged(ctx, c.St, staged); err != nil {
			return err
		}
		if err := c.record(ctx, items); err != nil {
			return err
		}
		// what arrived is no longer missing; what an artifact declared
		// and never came is recorded missing
		if err := c.clearArrived(ctx, items); err != nil {
			return err
		}
		return c.checkDeclared(ctx, items)
	})
	if len(staged) > 0 {
		if serr := c.settleStaged(ctx, staged, err == nil); serr != nil {
			// committed: the next open of the store renames them
			c.logf("settle staged files: %v", serr)
		}
		if err == nil {
			if nerr := c.noteStaged(ctx, staged); nerr != nil {
				c.logf("%v", nerr)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return runs, nil
}

// markSeen flags items already in the ledger, or seen earlier in this
// fetch, as skipped.
func (c *Consumer) markSeen(ctx context.Context, items []*item) error {
	var ids []any
	for _, it := range items {
		if it.poison == nil {
			ids = append(ids, it.id)
		}
	}
	seen := map[string]bool{}
	if len(ids) > 0 {
		q := "SELECT msg_id FROM ingested_batches WHERE msg_id IN (?" + strings.Repeat(", ?", len(ids)-1) + ")"
		rows, err := c.St.Query(ctx, q, ids...)
		if err != nil {
			return fmt.Errorf("look up batch ids: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			seen[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for _, it := range items {
		if it.poison != nil {
			continue
		}
		it.skipped = seen[it.id]
		seen[it.id] = true
	}
	return nil
}

var ledgerSchema = arrow.NewSchema([]arrow.Field{
	{Name: "msg_id", Type: arrow.BinaryTypes.String},
	{Name: "stream_seq", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "subject", Type: arrow.BinaryTypes.String},
	{Name: "tbl", Type: arrow.BinaryTypes.String},
	{Name: "run_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "rows", Type: arrow.PrimitiveTypes.Int64},
	{Name: "bytes", Type: arrow.PrimitiveTypes.Int64},
	{Name: "sent_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ingested_ns", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// record writes the ledger rows of the new batches and the rejections.
func (c *Consumer) record(ctx context.Context, items []*item) error {
	now := time.Now().UnixNano()
	b := array.NewRecordBuilder(memory.DefaultAllocator, ledgerSchema)
	defer b.Release()
	for _, it := range items {
		if it.poison != nil {
			// whatever a hostile message carries, its rejection must store
			text := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
			hdr := fmt.Sprint(it.msg.Headers())
			if err := c.St.Exec(ctx, `INSERT INTO rejected_batches (stream_seq, subject, msg_id, headers, bytes, reason, rejected_ns, run_token)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				it.seq, text(it.msg.Subject()), text(it.id), text(hdr), len(it.msg.Data()), text(it.poison.Error()), now,
				text(transport.SubjectRun(it.msg.Subject()))); err != nil {
				return fmt.Errorf("record rejected message: %w", err)
			}
			continue
		}
		if it.skipped {
			continue
		}
		b.Field(0).(*array.StringBuilder).Append(it.id)
		b.Field(1).(*array.Uint64Builder).Append(it.seq)
		b.Field(2).(*array.StringBuilder).Append(it.msg.Subject())
		b.Field(3).(*array.StringBuilder).Append(it.table)
		b.Field(4).(*array.StringBuilder).Append(it.run)
		b.Field(5).(*array.Int64Builder).Append(it.rec.NumRows())
		b.Field(6).(*array.Int64Builder).Append(int64(len(it.msg.Data())))
		if it.sentNS > 0 {
			b.Field(7).(*array.Int64Builder).Append(it.sentNS)
		} else {
			b.Field(7).AppendNull()
		}
		b.Field(8).(*array.Int64Builder).Append(now)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := c.St.Insert(ctx, "ingested_batches", rec); err != nil {
		return fmt.Errorf("record batch ids: %w", err)
	}
	return nil
}
