package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/trainscope/trainscope/ingest/kineto"
)

// insertTrace hands one trace's batches to sink after checking that its
// rank is free.
func insertTrace(ctx context.Context, sink Sink, opt Options, tr *kineto.Trace, taken map[int32]string, stats *Stats) error {
	if prev, ok := taken[tr.Rank]; ok {
		return &InputError{fmt.Errorf("%s: rank %d (from %s) is already taken by %s; analyze one run at a time, or keep ranks apart with --ranks", tr.Path, tr.Rank, tr.RankSource, prev)}
	}
	taken[tr.Rank] = tr.Path
	t0 := time.Now()
	defer func() { stats.Insert += time.Since(t0) }()
	if opt.GPU != "" && tr.GPUName() == "" {
		tr.Devices = append(tr.Devices, kineto.DeviceProps{Name: opt.GPU})
	}
	if err := Send(ctx, sink, tr.Path, TraceBatches(tr, opt.RunID, hostOf(opt, tr.Host)), opt.warn); err != nil {
		return err
	}
	stats.Slices += int64(tr.Slices.Len())
	return nil
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
