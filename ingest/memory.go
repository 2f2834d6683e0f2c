package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/trainscope/trainscope/ingest/memsnap"
	"github.com/trainscope/trainscope/sql/duck"
)

// InsertSnapshot stores a memory snapshot's tables under run and rank.
func InsertSnapshot(ctx context.Context, st *duck.Store, snap *memsnap.Snapshot, runID, host string, rank int32) error {
	seg := snap.Segments.Record(runID, host, rank)
	defer seg.Release()
	blk := snap.Blocks.Record(runID, rank)
	defer blk.Release()
	ev := snap.Events.Record(runID, rank)
	defer ev.Release()
	if err := st.Insert(ctx, "mem_segments", seg); err != nil {
		return fmt.Errorf("%s: %w", snap.Path, err)
	}
	if err := st.Insert(ctx, "mem_blocks", blk); err != nil {
		return fmt.Errorf("%s: %w", snap.Path, err)
	}
	if err := st.Insert(ctx, "mem_events", ev); err != nil {
		return fmt.Errorf("%s: %w", snap.Path, err)
	}
	keys := make([]string, 0, len(snap.Settings))
	for k := range snap.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, _ := json.Marshal(snap.Settings[k])
		if err := st.Exec(ctx, "INSERT INTO mem_settings VALUES (?, ?, ?, ?)", runID, rank, k, string(v)); err != nil {
			return fmt.Errorf("%s: allocator settings: %w", snap.Path, err)
		}
	}
	return nil
}
