package ingest_test

import (
	"context"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/ingest/memsnap"
	"github.com/trainscope/trainscope/sql/duck"
)

func TestInsertSnapshot(t *testing.T) {
	path := corpus.Path(t, "memsnap/magma27_memory_snapshot.json.gz")
	snap, err := memsnap.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := ingest.InsertSnapshot(ctx, st, snap, "m", "node-1", 3, nil); err != nil {
		t.Fatal(err)
	}
	var segs, blocks, events, expandable int64
	var reserved, allocated int64
	q := `SELECT (SELECT count(*) FROM mem_segments), (SELECT count(*) FROM mem_blocks), (SELECT count(*) FROM mem_events),
	             (SELECT count(*) FILTER (WHERE is_expandable) FROM mem_segments),
	             (SELECT sum(total_size)::BIGINT FROM mem_segments WHERE rank = 3 AND host = 'node-1'),
	             (SELECT sum(size)::BIGINT FROM mem_blocks WHERE state = 'active_allocated')`
	if err := st.Conn().QueryRowContext(ctx, q).Scan(&segs, &blocks, &events, &expandable, &reserved, &allocated); err != nil {
		t.Fatal(err)
	}
	var wantReserved, wantAllocated int64
	for _, v := range snap.Segments.Total.V {
		wantReserved += v
	}
	for _, v := range snap.Segments.Allocated.V {
		wantAllocated += v
	}
	if segs != 216 || events != 5163 || blocks != int64(snap.Blocks.Len()) || expandable != 0 {
		t.Errorf("rows: %d segments, %d blocks, %d events, %d expandable", segs, blocks, events, expandable)
	}
	// allocated_size of a segment is the sum of its active_allocated blocks
	if reserved != wantReserved || allocated != wantAllocated {
		t.Errorf("reserved %d allocated %d, want %d %d", reserved, allocated, wantReserved, wantAllocated)
	}
	var conf string
	if err := st.Conn().QueryRowContext(ctx, `SELECT value FROM mem_settings WHERE key = 'expandable_segments'`).Scan(&conf); err != nil || conf != "false" {
		t.Errorf("setting = %q, %v", conf, err)
	}
}
