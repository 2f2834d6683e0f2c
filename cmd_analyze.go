package main

import (
	"context"
	"io"
	"strings"

	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/internal/analyze"
	"github.com/trainscope/trainscope/internal/cli"
)

const analyzeHelp = `Usage: trainscope analyze DIR_OR_FILES... [flags]

Reads PyTorch profiler (Kineto) traces, one file per rank (.json or .json.gz),
Nsight Systems SQLite exports (one trace per GPU), CUDA memory snapshots
(JSON), launch scripts (.sh, for the config audit) and saved dcgm-exporter
scrapes (.prom, into the counters table: host from the Hostname label,
device from gpu; the hardware detectors read them), loads them into
DuckDB, runs the built-in detectors and prints a report that fits one
screen: the verdict (the root cause that costs the most step time, with its
evidence), the root causes, the findings one line per detector in
PerfTracker's sections, and the top recommendations. --full adds every
metric table; the JSON and HTML reports (with charts) always hold them.

A file that cannot be read (a truncated or corrupt trace) ends the command
with exit status 2, naming it; --skip-bad instead leaves it out, and the
report says which files were skipped and why. Named pipes, sockets and
devices in a folder are skipped with a warning (never opened); given by
name, they are refused.

By default every ProfilerStep but the last is analysed (the last one is often
cut short), as Holistic Trace Analysis does. Hosts come from --host or from
a trace's own host_name metadata, never from a file name (tensorboard's
<worker>_<pid>.<ms> names a worker, not a machine); they place ranks on
nodes for slow_host and for the collectives' transport, which is
"unknown" while a host is.

Without --db, the bulk of the run (its slices and counters) is written
trace by trace as Parquet files to a folder in the system's temp folder
(TMPDIR), where the detectors read it; the folder is removed when the
command ends (if it is killed, by the next one). DuckDB keeps up to 512MB
of the other tables in memory (duckdb.memory_limit, or
TRAINSCOPE_DUCKDB_MEMORY_LIMIT=2GB, changes it), the rest in that folder
too. With --db and without duckdb.memory_limit, DuckDB gets 256MB while a
trace of some 300,000 events or more goes in.

Examples:
  trainscope analyze traces/                       # a folder of rank traces
  trainscope analyze traces/ --db run.duckdb       # keep the database for 'trainscope sql'
  trainscope analyze rank0.json.gz rank1.json.gz --steps 3-7 --format json
  trainscope analyze traces/ --format html -o report.html   # one page to share
  trainscope analyze traces/ -q --timing           # where the time goes, peak memory, slowest detectors
  trainscope analyze traces/ --archive /mnt/archive   # add the run to the fleet archive
  trainscope analyze traces/ --skip-bad            # a truncated rank is named in the report, the rest analysed

Flags:
`

func runAnalyze(ctx context.Context, args []string, out, errOut io.Writer) error {
	var o analyze.Options
	fs := cli.FlagSet("analyze", analyzeHelp, errOut)
	fs.StringVar(&o.Format, "format", "md", formatHelp)
	fs.BoolVar(&o.Full, "full", false, fullHelp)
	fs.StringVar(&o.DB, "db", "", "write the DuckDB database to this file (default: in memory, discarded)")
	fs.StringVar(&o.Archive, "archive", "", "also add the run to this fleet archive, a folder or s3://bucket/prefix (as 'serve --archive' writes it)")
	fs.StringVar(&o.Parquet, "parquet", "", "also export every table to this folder as hive-partitioned Parquet")
	fs.StringVar(&o.Steps, "steps", "", "analyse these ProfilerSteps only, e.g. 3-7 or 5")
	fs.StringVar(&o.Ranks, "ranks", "", "load these ranks only, e.g. 0,2 or 0-3")
	fs.StringVar(&o.Run, "run", "", "run id (default: the name of the folder the traces are in)")
	fs.StringVar(&o.Host, "host", "", "host name to record for these traces")
	fs.StringVar(&o.GPU, "gpu", "", "GPU model when the traces do not say (a catalog key: "+strings.Join(gpu.Keys(), ", ")+")")
	fs.IntVar(&o.Rank, "rank", -1, rankHelp)
	fs.IntVar(&o.Workers, "workers", 0, "files read in parallel (default: one per core)")
	fs.StringVar(&o.ReadMemory, "read-memory", "", "what the traces read at once may hold, e.g. 256MB (read_memory; default: room for 4 of the largest traces, at least 128MB)")
	fs.StringVarP(&o.Out, "out", "o", "", outHelp)
	fs.StringVar(&o.Config, "config", "", configHelp)
	fs.StringArrayVar(&o.Detectors, "detectors", nil, detectorsHelp)
	fs.BoolVarP(&o.Quiet, "quiet", "q", false, quietHelp)
	fs.DurationVar(&o.UntracedStep, "untraced-step", 0, "the step time without the profiler, from your training log (e.g. 29.3ms): the verdict takes what the traced step spends beyond it off the host-side causes, as the profiler's own cost (default: estimated from the events recorded)")
	fs.BoolVar(&o.SkipBad, "skip-bad", false, "go on past a file that cannot be read (truncated, not a trace): the report names each one skipped and why")
	cli.ThreadsVar(fs, &o.Threads)
	fs.BoolVar(&o.Timing, "timing", false, "print a per-phase timing line with the peak memory, and the slowest detectors and shared views, on stderr")
	if err := cli.Parse(fs, args, out); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return cli.Usage("analyze: give trace files or folders (see 'trainscope analyze --help')")
	}
	return analyze.Run(ctx, fs.Args(), o, out, errOut)
}
