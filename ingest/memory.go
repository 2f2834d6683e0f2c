package ingest

import (
	"context"

	"github.com/trainscope/trainscope/ingest/memsnap"
	"github.com/trainscope/trainscope/sql/duck"
)

// InsertSnapshot stores a memory snapshot's tables under run and rank,
// without a ranks row (the caller's trace, if any, gives that); warn
// hears of text that had to be repaired.
func InsertSnapshot(ctx context.Context, st *duck.Store, snap *memsnap.Snapshot, runID, host string, rank int32, warn func(string)) error {
	bs, err := SnapshotBatches(snap, runID, host, rank)
	if err != nil {
		return err
	}
	Release(bs[len(bs)-1:])
	return Send(ctx, StoreSink{st}, snap.Path, bs[:len(bs)-1], warn)
}
