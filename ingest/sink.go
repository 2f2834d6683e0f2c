package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/trainscope/trainscope/ingest/trace"
	"github.com/trainscope/trainscope/stream"
)

// insertTrace hands one trace's batches to sink after checking that its
// rank is free.
func insertTrace(ctx context.Context, sink Sink, opt Options, tr *trace.Trace, taken map[int32]string, stats *Stats) error {
	if prev, ok := taken[tr.Rank]; ok {
		return &InputError{fmt.Errorf("%s: rank %d (from %s) is already taken by %s; analyze one run at a time, or keep ranks apart with --ranks", tr.Path, tr.Rank, tr.RankSource, prev)}
	}
	taken[tr.Rank] = tr.Path
	t0 := time.Now()
	defer func() { stats.Insert += time.Since(t0) }()
	if opt.GPU != "" && tr.GPUName() == "" {
		tr.Devices = append(tr.Devices, trace.DeviceProps{Name: opt.GPU})
	}
	if err := sendTrace(ctx, sink, opt, tr); err != nil {
		return err
	}
	stats.Slices += int64(tr.Slices.Len())
	return nil
}

// sendTrace sends a trace's batches: those of a trace read in two passes
// (kineto.ReadFileTwoPass) read again chunk by chunk, each sent as it
// comes, then the rest.
func sendTrace(ctx context.Context, sink Sink, opt Options, tr *trace.Trace) error {
	host := hostOf(opt, tr.Host)
	if !tr.TwoPass() {
		return Send(ctx, sink, tr.Path, TraceBatches(tr, opt.RunID, host), opt.warn)
	}
	beginArtifact(sink, tr.Path)
	if h, ok := sink.(interface{ HugeTrace(bool) }); ok {
		h.HugeTrace(true)
		defer h.HugeTrace(false)
	}
	// the file is read again beside the inserts: each chunk is built
	// while the one before goes in
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks := make(chan []Batch)
	read := make(chan error, 1)
	go func() {
		defer close(chunks)
		read <- tr.EachChunk(func(c *stream.SliceTable, cs *stream.CounterTable) error {
			cores, detail := c.TakeRecords(opt.RunID, host, tr.Rank)
			bs := make([]Batch, 0, len(cores)+2)
			for _, r := range cores {
				bs = append(bs, Batch{"slices_core", r})
			}
			bs = append(bs, Batch{"slices_detail", detail})
			if cs != nil {
				bs = append(bs, Batch{"counters", cs.Record(opt.RunID, host, tr.Rank, true)})
			}
			select {
			case chunks <- bs:
				return nil
			case <-ctx.Done():
				Release(bs)
				return ctx.Err()
			}
		})
	}()
	var err error
	for bs := range chunks {
		if err != nil {
			Release(bs) // a send failed: let the reader stop
			continue
		}
		if err = sendMore(ctx, sink, tr.Path, bs, opt.warn); err != nil {
			cancel()
		}
	}
	if rerr := <-read; err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	return sendMore(ctx, sink, tr.Path, TraceBatches(tr, opt.RunID, host), opt.warn)
}

// hostOf is the host a file's rows are recorded under: --host when given,
// else the host the trace itself names (its metadata), else "" (unknown).
// A file name is never taken for a host: tensorboard_trace_handler's
// <worker>_<pid>.<ms>.pt.trace.json names a worker, and "worker5_step_12"
// read as a host made eight GPUs of one machine eight hosts apart.
func hostOf(opt Options, traceHost string) string {
	if opt.Host != "" {
		return opt.Host
	}
	return traceHost
}
