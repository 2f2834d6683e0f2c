package main

import (
	"context"
	"io"

	"github.com/trainscope/trainscope/internal/analyze"
	"github.com/trainscope/trainscope/internal/cli"
)

const profileHelp = `Usage: trainscope profile --memory SNAPSHOT.json[.gz] [--trace TRACE.json[.gz]] [flags]

Reports on a CUDA caching-allocator snapshot (the JSON that
torch.cuda.memory._snapshot() returns): reserved, allocated, active and
requested memory per device, fragmentation, rounding waste, the largest
segments, allocator action counts, the allocation sites that asked for the
most, and out-of-memory events. With --trace, the profiler trace of the same
rank is analysed too, into the same report.

A pickle (torch.cuda.memory._dump_snapshot) is never deserialized; the error
says how to export JSON instead. Only the files named here are read.

Flags:
`

func runProfile(ctx context.Context, args []string, out, errOut io.Writer) error {
	var o analyze.ProfileOptions
	fs := cli.FlagSet("profile", profileHelp, errOut)
	fs.StringVar(&o.Memory, "memory", "", "memory snapshot (JSON or JSON.gz)")
	fs.StringVar(&o.Trace, "trace", "", "PyTorch profiler trace of the same rank")
	fs.StringVar(&o.Format, "format", "md", formatHelp)
	fs.BoolVar(&o.Full, "full", false, fullHelp)
	fs.StringVarP(&o.Out, "out", "o", "", outHelp)
	fs.StringVar(&o.DB, "db", "", "write the DuckDB database to this file")
	fs.StringVar(&o.Run, "run", "", "run id (default: the snapshot's file name)")
	fs.StringVar(&o.Host, "host", "", "host name to record")
	fs.IntVar(&o.Rank, "rank", -1, "rank (default: from the file name, else 0)")
	fs.StringVar(&o.Config, "config", "", configHelp)
	fs.BoolVarP(&o.Quiet, "quiet", "q", false, quietHelp)
	cli.ThreadsVar(fs, &o.Threads)
	if err := cli.Parse(fs, args, out); err != nil {
		return err
	}
	return analyze.Profile(ctx, fs.Args(), o, out, errOut)
}
