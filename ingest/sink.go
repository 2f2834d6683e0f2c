package ingest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/trainscope/trainscope/ingest/kineto"
	"github.com/trainscope/trainscope/sql/duck"
)

// insertTrace moves one trace's tables into the store and records its rank.
func insertTrace(ctx context.Context, st *duck.Store, opt Options, tr *kineto.Trace, taken map[int32]string, runs *runAccumulator, stats *Stats) error {
	if prev, ok := taken[tr.Rank]; ok {
		return &InputError{fmt.Errorf("%s: rank %d (from %s) is already taken by %s; analyze one run at a time, or keep ranks apart with --ranks", tr.Path, tr.Rank, tr.RankSource, prev)}
	}
	taken[tr.Rank] = tr.Path
	t0 := time.Now()
	defer func() { stats.Insert += time.Since(t0) }()
	host := opt.Host
	if tr.Slices.Len() > 0 {
		core, detail := tr.Slices.SplitRecords(opt.RunID, host, tr.Rank)
		err := st.Insert(ctx, "slices_core", core)
		if err == nil {
			err = st.Insert(ctx, "slices_detail", detail)
		}
		core.Release()
		detail.Release()
		if err != nil {
			return fmt.Errorf("%s: %w", tr.Path, err)
		}
		stats.Slices += int64(tr.Slices.Len())
	}
	if tr.Steps.Len() > 0 {
		rec := tr.Steps.Record(opt.RunID, tr.Rank)
		err := st.Insert(ctx, "steps", rec)
		rec.Release()
		if err != nil {
			return fmt.Errorf("%s: %w", tr.Path, err)
		}
	}
	if tr.Counters.Len() > 0 {
		rec := tr.Counters.Record(opt.RunID, host, tr.Rank, true)
		err := st.Insert(ctx, "counters", rec)
		rec.Release()
		if err != nil {
			return fmt.Errorf("%s: %w", tr.Path, err)
		}
	}
	var mem, sms any
	gpuName := tr.GPUName()
	for _, d := range tr.Devices {
		if d.Name == gpuName {
			mem, sms = d.TotalGlobalMem, d.NumSMs
			break
		}
	}
	var world any
	if tr.Dist.WorldSize > 0 {
		world = tr.Dist.WorldSize
	}
	err := st.Exec(ctx, `INSERT INTO ranks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		opt.RunID, tr.Rank, host, tr.Path, tr.RankSource, world, nullIfEmpty(tr.Dist.Backend), gpuName, mem, sms,
		tr.BaseTimeNS, tr.StartNS, tr.EndNS, tr.Complete, int64(tr.Counts["events"]), tr.JSONBytes)
	if err != nil {
		return fmt.Errorf("%s: record rank: %w", tr.Path, err)
	}
	tids := make([]int64, 0, len(tr.ThreadNames))
	for tid := range tr.ThreadNames {
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	for _, tid := range tids {
		if err := st.Exec(ctx, `INSERT INTO threads VALUES (?, ?, ?, ?)`, opt.RunID, tr.Rank, tid, tr.ThreadNames[tid]); err != nil {
			return fmt.Errorf("%s: record thread names: %w", tr.Path, err)
		}
	}
	for _, pg := range tr.Dist.PGConfig {
		if err := st.Exec(ctx, `INSERT INTO process_groups VALUES (?, ?, ?, ?, ?, ?, ?::INTEGER[])`,
			opt.RunID, tr.Rank, string(pg.Name), pg.Desc, pg.BackendConfig, pg.Size, intList(pg.Ranks)); err != nil {
			return fmt.Errorf("%s: record process group: %w", tr.Path, err)
		}
	}
	runs.add(tr, gpuName)
	return nil
}

func intList(v []int) string {
	b := []byte{'['}
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%d", x)
	}
	return string(append(b, ']'))
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// runAccumulator gathers the runs row while traces arrive.
type runAccumulator struct {
	id         string
	world      int
	gpus       map[string]int
	start, end int64
	sources    []string
}

func (r *runAccumulator) add(tr *kineto.Trace, gpu string) {
	if r.gpus == nil {
		r.gpus = map[string]int{}
	}
	r.world = max(r.world, tr.Dist.WorldSize)
	if gpu != "" {
		r.gpus[gpu]++
	}
	if tr.StartNS != 0 && (r.start == 0 || tr.StartNS < r.start) {
		r.start = tr.StartNS
	}
	r.end = max(r.end, tr.EndNS)
	r.sources = append(r.sources, tr.Path)
}

func (r *runAccumulator) insert(ctx context.Context, st *duck.Store) error {
	gpu, best := "", 0
	for g, n := range r.gpus {
		if n > best || (n == best && g < gpu) {
			gpu, best = g, n
		}
	}
	var world any
	if r.world > 0 {
		world = r.world
	}
	if err := st.Exec(ctx, "DELETE FROM runs WHERE run_id = ?", r.id); err != nil {
		return err
	}
	return st.Exec(ctx, `INSERT INTO runs VALUES (?, 'pytorch', NULL, ?, ?, ?, ?, ?::VARCHAR[])`,
		r.id, world, nullIfEmpty(gpu), r.start, r.end, stringList(r.sources))
}

func stringList(v []string) string {
	b := []byte{'['}
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\'')
		for _, c := range []byte(s) {
			if c == '\'' {
				b = append(b, '\'')
			}
			b = append(b, c)
		}
		b = append(b, '\'')
	}
	return string(append(b, ']'))
}
