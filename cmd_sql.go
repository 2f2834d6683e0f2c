package main

import (
	"context"
	"io"
	"os"

	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/internal/query"
)

const sqlHelp = `Usage: trainscope sql (--db FILE | --server ADDR) [--format table|csv|json] "SELECT ..."

Runs SQL on a database written by 'trainscope analyze --db FILE' (opened
read-only), or on the live database of a running 'trainscope serve'
through its Flight SQL endpoint (--server host:port; the server runs
read-only queries only). Give the query as an argument, or '-' to read
it from stdin.

Tables: runs, ranks, process_groups, threads, stacks, slices (a view over
slices_core and slices_detail), steps, counters, mem_segments, mem_blocks,
mem_events, mem_settings, script_flags, script_context, findings, metrics,
metric_<detector> (each metric detector's rows, one column per measure,
documented in duckdb_tables() and duckdb_columns()),
root_causes (the report's ranked root causes), node_history (how every
GPU and link fared in each run: slow, throttled, GPU errors, hangs, late
arrivals), analysis_window, gpu_specs;
the pipeline's bookkeeping: ingested_batches, rejected_batches and
analyses. Views: gpu_window, host_window, gpu_span, gpu_busy,
gpu_class_time, collective_instances (each rank's wait and transfer in
every matched collective), collective_waits, late_arrivals,
host_op_time, host_stack_time (host time per rank, thread, operator and
call stack), step_memory_peaks, run_status, analysed_span (the time
each rank's analysed steps span), counters_by_rank (counters with the
rank of their GPU), gpu_samples (GPU counters from any source
under one vocabulary: sm_clock_mhz, power_w, temp_c, clock_reasons, xid,
tensor_active ...), rank_steps (one row per run, rank and step: step time,
compute, transfer and wait, memory peaks, clocks, power and throttling
during the step, the launch script's parallel settings), node_reputation
(every GPU and link over its last 10 runs: bad runs of how many, and a
score that needs several bad runs to rise; node_reputation_over(n) for
the last n). Macros:
interval_union, covered_time, exposed_time, robust_z, pct, fmt_ns,
fmt_bytes, peak_tflops, dtype_bytes, bus_factor, clock_reasons_text,
xid_text.

Rows are printed as they arrive. A server may limit a query's time and rows
(serve.query.timeout, serve.query.max_rows) and ask for a token (--token,
or TRAINSCOPE_TOKEN) and TLS (grpc+tls://host:port, --ca, --cert/--key).

Examples:
  trainscope sql --db run.duckdb "SELECT severity, message FROM findings"
  trainscope sql --db run.duckdb --format csv "SELECT * FROM metrics WHERE detector = 'temporal_breakdown'"
  trainscope sql --server localhost:7071 --format json "SELECT run_id, world_size FROM runs"
  trainscope sql --db fleet.duckdb "SELECT node, bad_runs, runs, score, bad_run_ids FROM node_reputation WHERE bad_runs >= 3"

Flags:
`

func runSQL(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := cli.FlagSet("sql", sqlHelp, errOut)
	var o query.Options
	fs.StringVar(&o.DB, "db", "", "database file written by analyze --db")
	fs.StringVar(&o.Server, "server", "", "host:port of a running 'trainscope serve' Flight SQL endpoint")
	fs.StringVar(&o.Format, "format", "table", "output format: table, csv or json")
	fs.StringVar(&o.Dialer.Token, "token", os.Getenv("TRAINSCOPE_TOKEN"), "bearer token for --server (default: TRAINSCOPE_TOKEN)")
	fs.StringVar(&o.Dialer.CAFile, "ca", "", "CA certificate (PEM) to verify --server's TLS certificate")
	fs.StringVar(&o.Dialer.CertFile, "cert", "", "client certificate (PEM) for a --server that requires one")
	fs.StringVar(&o.Dialer.KeyFile, "key", "", "client key (PEM) for --cert")
	if err := cli.Parse(fs, args, out); err != nil {
		return err
	}
	return query.Run(ctx, fs.Args(), o, out)
}
