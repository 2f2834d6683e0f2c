package main

import (
	"context"
	"io"

	"github.com/trainscope/trainscope/internal/agent"
	"github.com/trainscope/trainscope/internal/cli"
)

const publishHelp = `Usage: trainscope publish --run ID [flags] FILES_OR_FOLDERS...

Reads PyTorch profiler traces (.json, .json.gz) and memory snapshots with the
same readers as 'analyze' and publishes them to JetStream as Arrow batches,
for a 'trainscope serve' (or an ingestor on a NATS cluster) to ingest.

A file that cannot be read (a truncated or corrupt trace) ends the command
with exit status 2, naming it (what was published before it stays); --skip-bad
publishes the others and lists the files skipped and why.

Publishing a file again is harmless: its messages carry the same ids (run,
file, size, modification time and sequence), which JetStream and the
ingestor drop.

The server is nats.url (config, TRAINSCOPE_NATS_URL or --nats-url); without
one, the embedded server of a local 'trainscope serve' (nats://127.0.0.1:4222).

Examples:
  trainscope publish --run llama-7b-0412 traces/
  trainscope publish --run job42 --nats-url nats://nats.internal:4222 rank*.pt.trace.json.gz

Flags:
`

func runPublish(ctx context.Context, args []string, out, errOut io.Writer) error {
	var o agent.PublishOptions
	fs := cli.FlagSet("publish", publishHelp, errOut)
	connFlags(fs, &o.Conn)
	fs.IntVar(&o.Rank, "rank", -1, rankHelp)
	fs.BoolVarP(&o.Quiet, "quiet", "q", false, quietHelp)
	fs.BoolVar(&o.SkipBad, "skip-bad", false, "go on past a file that cannot be read (truncated, not a trace), naming each one skipped")
	if err := cli.Parse(fs, args, out); err != nil {
		return err
	}
	return agent.PublishFiles(ctx, fs.Args(), o, out, errOut)
}
