package ingest

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/trainscope/trainscope/sql/duck"
)

// StoreSink inserts batches into a DuckDB store. It is what both paths end
// in: Load calls it directly, the JetStream consumer after decoding.
type StoreSink struct{ St *duck.Store }

// Insert appends rec to table. A ranks row from a trace replaces one that
// only a memory snapshot gave; a second row for a rank that already has one
// is ignored, so that a batch seen twice changes nothing.
func (s StoreSink) Insert(ctx context.Context, table string, rec arrow.RecordBatch) error {
	if table != "ranks" {
		return s.St.Insert(ctx, table, rec)
	}
	_, err := s.insertRanks(ctx, []arrow.RecordBatch{rec})
	return err
}

// RefreshRuns rebuilds the runs rows of the given runs from their ranks:
// the world size, the most common GPU, the time span and the sources. Two
// statements for all of them: a commit of many small traces touches many
// runs, and two statements a run cost 7% of the ingestor's time
// (bench/tmp/r64 x 16).
func RefreshRuns(ctx context.Context, st *duck.Store, runIDs ...string) error {
	if len(runIDs) == 0 {
		return nil
	}
	ids := make([]any, len(runIDs))
	for i, id := range runIDs {
		ids[i] = id
	}
	in := "(?" + strings.Repeat(", ?", len(ids)-1) + ")"
	err := st.Exec(ctx, "DELETE FROM runs WHERE run_id IN "+in, ids...)
	if err == nil {
		err = st.Exec(ctx, `INSERT INTO runs
			SELECT run_id, 'pytorch', NULL, max(world_size),
			       (SELECT gpu_name FROM ranks g WHERE g.run_id = r.run_id AND gpu_name IS NOT NULL
			        GROUP BY gpu_name ORDER BY count(*) DESC, gpu_name LIMIT 1),
			       min(start_ns) FILTER (WHERE start_ns > 0), max(end_ns),
			       list(source ORDER BY rank, source)
			FROM ranks r WHERE run_id IN `+in+` GROUP BY run_id`, ids...)
	}
	if err != nil {
		return fmt.Errorf("record runs %s: %w", strings.Join(runIDs, ", "), err)
	}
	return nil
}

// bufferedSink gathers batches per table and inserts them together once
// about limit rows are waiting, and at Flush: a folder of many small traces
// (1,024 ranks of one step) then costs a few large inserts instead of seven
// small ones per file, each paying DuckDB's per-statement overhead. Large
// batches (big traces) go in once a quarter of limit waits in them: they gain
// nothing from waiting and hold memory (on syn8, 8 traces of 216K events,
// flushing at 1M rows held ~110 MB more at the peak than at 256K; on 1,024
// small traces, flushing at 256K rows made the inserts 5 s slower, before
// checkpoints stopped merging row groups: see flushRows).
type bufferedSink struct {
	st    *duck.Store
	limit int64
	rows  int64
	big   int64 // rows waiting in batches of largeBatch rows or more
	huge  bool  // a batch of hugeBatch rows waits
	// hugeTrace: the batches are a huge trace's chunks (HugeTrace)
	hugeTrace bool
	// hugeLimit is DuckDB's memory limit while huge batches go in ("":
	// the store's); see Options.HugeTraceMemoryLimit
	hugeLimit string
	// writers bounds the staged files written at once (0: GOMAXPROCS)
	writers int
	order   []string
	pending map[string][]arrow.RecordBatch
}

// flushRows is the limit of a sink that loads into st. A staged store's
// flushes write files, which hold the rows: waiting would hold them in Go
// as well, so each big trace goes on its own and small ones 384K rows at
// a time (at a million rows, 512 small ranks peaked a third higher:
// bench/RESULTS.md, "syn8 under 300 MB", measured on the compressed
// in-memory store analyze had before it staged). A store that appends
// everything gathers a million rows: its appends only grew slower with
// smaller ones.
func flushRows(st *duck.Store) int64 {
	if traceByTrace(st) {
		return 384 << 10
	}
	return 1 << 20
}

// traceByTrace says whether a load into st flushes trace by trace (see
// flushRows): into a store whose slices and counters are staged.
func traceByTrace(st *duck.Store) bool { return st.StagedDir() != "" }

func newBufferedSink(st *duck.Store, limit int64) *bufferedSink {
	return &bufferedSink{st: st, limit: limit, pending: map[string][]arrow.RecordBatch{}}
}

// largeBatch is the size of a batch that counts as large.
const largeBatch = 32 << 10

// hugeBatch is the size of a batch that comes from a trace too big to be
// one batch (stream.SliceTable.TakeRecords' chunks).
const hugeBatch = 1 << 18

// HugeTrace says that the batches that come, until HugeTrace(false), are
// the chunks of a trace too big to hold (kineto.ReadFileTwoPass): each
// flush is then a huge one (see flush).
func (s *bufferedSink) HugeTrace(on bool) { s.hugeTrace = on }

// Insert keeps rec (retaining it) until the next flush.
func (s *bufferedSink) Insert(ctx context.Context, table string, rec arrow.RecordBatch) error {
	if _, ok := s.pending[table]; !ok {
		s.order = append(s.order, table)
	}
	rec.Retain()
	s.pending[table] = append(s.pending[table], rec)
	s.rows += rec.NumRows()
	if rec.NumRows() >= largeBatch {
		s.big += rec.NumRows()
	}
	s.huge = s.huge || s.hugeTrace || rec.NumRows() >= hugeBatch
	bigLimit := s.limit / 4
	if traceByTrace(s.st) {
		// each trace is staged on its own: waiting would hold it beside
		// the next
		bigLimit = largeBatch
	}
	if s.rows >= s.limit || s.big >= bigLimit {
		return s.Flush(ctx)
	}
	return nil
}

// Flush inserts everything waiting, the ranks rows last, and releases it.
func (s *bufferedSink) Flush(ctx context.Context) error {
	defer s.release()
	if s.huge && s.hugeLimit != "" {
		return s.st.WithMemoryLimit(ctx, s.hugeLimit, func() error { return s.flush(ctx) })
	}
	return s.flush(ctx)
}

func (s *bufferedSink) flush(ctx context.Context) error {
	var staged []string
	for _, t := range s.order {
		if t == "ranks" {
			continue
		}
		if s.st.Staged(t) {
			staged = append(staged, t)
			continue
		}
		if err := s.st.InsertAll(ctx, t, s.pending[t]); err != nil {
			return fmt.Errorf("insert into %s: %w", t, err)
		}
	}
	if err := stageLoaded(ctx, s, staged); err != nil {
		return err
	}
	if recs := s.pending["ranks"]; len(recs) > 0 {
		if _, err := (StoreSink{s.st}).insertRanks(ctx, recs); err != nil {
			return err
		}
	}
	if s.huge {
		// a trace so big that its slices come in chunks: the chunks just
		// inserted are garbage, and DuckDB's share grows next; hand the Go
		// memory back now, or the two add up (a 1.5 GB trace peaked at
		// 1.72 GB, 1.30 GB with this, in the same time). Not for ordinary
		// traces: with other files still being read it costs their readers
		// (syn8: +0.35-0.7 s for 65 MB less)
		s.release()
		debug.FreeOSMemory()
	}
	return nil
}

// release drops what waits.
func (s *bufferedSink) release() {
	for _, recs := range s.pending {
		for _, r := range recs {
			r.Release()
		}
	}
	s.pending, s.order, s.rows, s.big, s.huge = map[string][]arrow.RecordBatch{}, nil, 0, 0, false
}
