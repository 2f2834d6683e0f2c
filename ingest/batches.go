package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/trainscope/trainscope/ingest/memsnap"
	"github.com/trainscope/trainscope/ingest/trace"
	"github.com/trainscope/trainscope/stream"
)

// Sink receives a reader's output one table batch at a time. The offline
// path inserts into DuckDB (StoreSink); the online path publishes to
// JetStream. Insert must not keep rec after it returns unless it retains it.
type Sink interface {
	Insert(ctx context.Context, table string, rec arrow.RecordBatch) error
}

// Batch is one table's rows from one artifact.
type Batch struct {
	Table string
	Rec   arrow.RecordBatch
}

// Release releases every batch's record (a batch already sent has none).
func Release(bs []Batch) {
	for _, b := range bs {
		if b.Rec != nil {
			b.Rec.Release()
		}
	}
}

// TraceBatches turns a trace into its table batches: events first, the
// ranks row last, so that a ranks row in the store means the trace's other
// batches were sent before it. The caller releases them. It takes the
// trace's slice columns: afterwards tr.Slices has only its length.
func TraceBatches(tr *trace.Trace, runID, host string) []Batch {
	var out []Batch
	// what the ranks row needs from the slices, before they are handed over
	gpuName := tr.GPUName()
	device, hasDevice := tr.Device()
	if tr.TwoPass() {
		// its slices were sent chunk by chunk (sendTrace); the stacks are
		// known
		if len(tr.Slices.Stacks) > 0 {
			out = append(out, Batch{"stacks", stream.StacksRecord(runID, tr.Rank, tr.Slices.Stacks, tr.Slices.Str)})
		}
	} else if tr.Slices.Len() > 0 {
		// the trace's columns go as they are copied: a big trace is never
		// held twice (its slices are no use to the caller afterwards)
		cores, detail := tr.Slices.TakeRecords(runID, host, tr.Rank)
		for _, c := range cores {
			out = append(out, Batch{"slices_core", c})
		}
		out = append(out, Batch{"slices_detail", detail})
		if len(tr.Slices.Stacks) > 0 {
			out = append(out, Batch{"stacks", stream.StacksRecord(runID, tr.Rank, tr.Slices.Stacks, tr.Slices.Str)})
		}
	}
	if tr.Steps.Len() > 0 {
		out = append(out, Batch{"steps", tr.Steps.Record(runID, tr.Rank)})
	}
	if len(tr.Account) > 0 {
		out = append(out, Batch{"step_account", stream.AccountRecord(runID, tr.Rank, tr.Account)})
	}
	if tr.Counters.Len() > 0 {
		out = append(out, Batch{"counters", tr.Counters.Record(runID, host, tr.Rank, true)})
	}
	if len(tr.ThreadNames) > 0 {
		tids := make([]int64, 0, len(tr.ThreadNames))
		for tid := range tr.ThreadNames {
			tids = append(tids, tid)
		}
		slices.Sort(tids)
		out = append(out, Batch{"threads", stream.ThreadsRecord(runID, tr.Rank, tids, tr.ThreadNames)})
	}
	if len(tr.Dist.PGConfig) > 0 {
		pgs := make([]stream.ProcessGroupRow, len(tr.Dist.PGConfig))
		for i, pg := range tr.Dist.PGConfig {
			ranks := make([]int32, len(pg.Ranks))
			for j, r := range pg.Ranks {
				ranks[j] = int32(r)
			}
			pgs[i] = stream.ProcessGroupRow{Name: string(pg.Name), Desc: pg.Desc, BackendConfig: pg.BackendConfig,
				Size: int32(pg.Size), Ranks: ranks}
		}
		out = append(out, Batch{"process_groups", stream.ProcessGroupsRecord(runID, tr.Rank, pgs)})
	}
	row := stream.RankRow{RunID: runID, Rank: tr.Rank, Host: host, Source: tr.Path, RankSource: tr.RankSource,
		WorldSize: int32(tr.Dist.WorldSize), Backend: tr.Dist.Backend, GPUName: gpuName,
		BaseTimeNS: tr.BaseTimeNS, StartNS: tr.StartNS, EndNS: tr.EndNS, Complete: tr.Complete,
		Events: int64(tr.Counts["events"]), JSONBytes: tr.JSONBytes}
	row.Device, row.HasDevice = device, hasDevice
	for _, d := range tr.Devices {
		if d.Name == row.GPUName {
			row.GPUMemBytes, row.NumSMs = d.TotalGlobalMem, int32(d.NumSMs)
			break
		}
	}
	out = append(out, Batch{"ranks", stream.RanksRecord([]stream.RankRow{row})})
	return out
}

// SnapshotBatches turns a memory snapshot into its table batches, ending
// with a ranks row marked as coming from a snapshot (a trace of the same
// rank replaces it). The caller releases them.
func SnapshotBatches(snap *memsnap.Snapshot, runID, host string, rank int32) ([]Batch, error) {
	out := []Batch{
		{"mem_segments", snap.Segments.Record(runID, host, rank)},
		{"mem_blocks", snap.Blocks.Record(runID, rank)},
		{"mem_events", snap.Events.Record(runID, rank)},
	}
	if len(snap.Settings) > 0 {
		keys := make([]string, 0, len(snap.Settings))
		vals := make(map[string]string, len(snap.Settings))
		for k, v := range snap.Settings {
			b, err := json.Marshal(v)
			if err != nil {
				Release(out)
				return nil, fmt.Errorf("%s: allocator setting %s: %w", snap.Path, k, err)
			}
			keys = append(keys, k)
			vals[k] = string(b)
		}
		sort.Strings(keys)
		out = append(out, Batch{"mem_settings", stream.MemSettingsRecord(runID, rank, keys, vals)})
	}
	out = append(out, Batch{"ranks", stream.RanksRecord([]stream.RankRow{{RunID: runID, Rank: rank, Host: host,
		Source: snap.Path, RankSource: stream.RankFromSnapshot,
		Events: int64(snap.Segments.Len() + snap.Events.Len()), JSONBytes: snap.JSONBytes}})})
	return out, nil
}

// Send hands batches to sink in order, releasing them all. Text that is
// not valid UTF-8 is replaced by U+FFFD first (DuckDB refuses it: such a
// batch could never be stored), and warn says where.
func Send(ctx context.Context, sink Sink, path string, bs []Batch, warn func(string)) error {
	beginArtifact(sink, path)
	return sendMore(ctx, sink, path, bs, warn)
}

// beginArtifact tells sink that the batches of the file at path start.
func beginArtifact(sink Sink, path string) {
	if b, ok := sink.(interface{ BeginArtifact(path string) }); ok {
		b.BeginArtifact(path)
	}
}

// sendMore is Send for more batches of the artifact begun last.
func sendMore(ctx context.Context, sink Sink, path string, bs []Batch, warn func(string)) error {
	defer Release(bs)
	for i, b := range bs {
		if b.Rec.NumRows() == 0 {
			continue
		}
		if err := stream.CheckRanges(b.Table, b.Rec); err != nil {
			return &InputError{fmt.Errorf("%s: %w", path, err)}
		}
		rec, repairs := stream.RepairText(b.Rec)
		for _, r := range repairs {
			if warn == nil {
				break
			}
			if r.Invalid > 0 {
				warn(fmt.Sprintf("%s: %d %s.%s value(s) were not valid UTF-8; bad bytes replaced by U+FFFD (first: %q)", path, r.Invalid, b.Table, r.Column, r.First))
			}
			if r.Cut > 0 {
				warn(fmt.Sprintf("%s: %d %s.%s value(s) were longer than %d KiB and were cut to it", path, r.Cut, b.Table, r.Column, stream.MaxTextBytes>>10))
			}
		}
		err := sink.Insert(ctx, b.Table, rec)
		rec.Release()
		// what the sink keeps it retained: drop the batch's own reference
		// now, so a big trace's records go as they are inserted, not at
		// the end
		b.Rec.Release()
		bs[i] = Batch{}
		if err != nil {
			return fmt.Errorf("%s: %s: %w", path, b.Table, err)
		}
	}
	return nil
}

// Collect is a Sink that keeps every batch it is given (retained), for a
// caller that wants a reader's output in memory: to publish it many times,
// or to benchmark inserting it. Release them with Release(c.Batches).
type Collect struct{ Batches []Batch }

// Insert keeps rec.
func (c *Collect) Insert(_ context.Context, table string, rec arrow.RecordBatch) error {
	rec.Retain()
	c.Batches = append(c.Batches, Batch{Table: table, Rec: rec})
	return nil
}
