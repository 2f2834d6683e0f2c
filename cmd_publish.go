package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
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

// natsFlags are the connection flags publish and agent share.
type natsFlags struct {
	config, url, host, run, gpu string
}

func (n *natsFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&n.run, "run", "", "run id (required)")
	fs.StringVar(&n.host, "host", "", "host name to record (default: this machine's name)")
	fs.StringVar(&n.url, "nats-url", "", "NATS server URL (default: nats.url, else the local serve)")
	fs.StringVar(&n.config, "config", "", "config file (YAML, TOML or JSON); also TRAINSCOPE_CONFIG")
	fs.StringVar(&n.gpu, "gpu", "", "GPU model when the traces do not say (a catalog key such as H100-SXM)")
}

// connect loads the config, connects, and finds (or creates) the stream.
func (n *natsFlags) connect(ctx context.Context, cmd string) (*Config, *nats.Conn, error) {
	if n.run == "" {
		return nil, nil, &usageError{cmd + ": --run ID is required: every batch belongs to a run"}
	}
	if err := stream.CheckRunID(n.run); err != nil {
		return nil, nil, &usageError{cmd + ": --run: " + err.Error()}
	}
	if n.host == "" {
		n.host, _ = os.Hostname()
	}
	if n.gpu != "" {
		if _, ok := gpu.Lookup(n.gpu); !ok {
			return nil, nil, &usageError{fmt.Sprintf("%s: --gpu %q is not in the GPU catalog (known: %s)", cmd, n.gpu, strings.Join(gpu.Keys(), ", "))}
		}
	}
	cfg, err := loadConfig(n.config)
	if err != nil {
		return nil, nil, err
	}
	override(&cfg.NATS.URL, n.url)
	if err := cfg.Validate(); err != nil {
		return nil, nil, &usageError{cmd + ": " + err.Error()}
	}
	nc, err := transport.Connect(cfg.NATS, "trainscope-"+cmd)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err == nil {
		// a stream that exists is left as its owner configured it
		if _, err = js.Stream(ctx, cfg.Stream.Name); errors.Is(err, jetstream.ErrStreamNotFound) {
			_, err = transport.EnsureStream(ctx, js, cfg.Stream)
		}
	}
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("stream %s on %s: %w", cfg.Stream.Name, nc.ConnectedUrlRedacted(), err)
	}
	return cfg, nc, nil
}

func runPublish(ctx context.Context, args []string, out, errOut io.Writer) error {
	var n natsFlags
	fs := flagSet("publish", publishHelp, errOut)
	n.register(fs)
	rank := fs.Int("rank", -1, "rank for a trace that names none in distributedInfo or its file name")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	skipBad := fs.Bool("skip-bad", false, "go on past a file that cannot be read (truncated, not a trace), naming each one skipped")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return &usageError{"publish: give trace files or folders (see 'trainscope publish --help')"}
	}
	files, err := ingest.DiscoverWith(fs.Args(), warnTo(errOut))
	if err != nil {
		return &inputError{err}
	}
	cfg, nc, err := n.connect(ctx, "publish")
	if err != nil {
		return err
	}
	defer nc.Close()
	t0 := time.Now()
	pub, err := transport.NewPublisher(nc, cfg.Stream, cfg.Publish)
	if err != nil {
		return err
	}
	var progress io.Writer
	if !*quiet {
		progress = errOut
	}
	sink := &ingest.PublishSink{P: pub, RunID: n.run, Host: n.host}
	stats, err := ingest.Read(ctx, sink, files, ingest.Options{RunID: n.run, Host: n.host, Rank: *rank, Progress: progress, GPU: n.gpu, Warn: warnTo(errOut), SkipBad: *skipBad})
	if cerr := pub.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		if ingest.IsInputError(err) {
			return &inputError{err}
		}
		return err
	}
	took := time.Since(t0)
	rows := pub.Stats.Rows.Load()
	bad := stats.Bad()
	fmt.Fprintf(out, "published run %s: %d files, %d rows in %d messages (%.1f MB) to %s in %s (%.0f rows/s)\n",
		n.run, len(stats.Files)-len(bad), rows, pub.Stats.Messages.Load(), float64(pub.Stats.Bytes.Load())/1e6,
		nc.ConnectedUrlRedacted(), took.Round(time.Millisecond), float64(rows)/took.Seconds())
	if len(bad) > 0 {
		fmt.Fprintf(out, "skipped %d file(s) that could not be read (--skip-bad):\n", len(bad))
		for _, f := range bad {
			fmt.Fprintf(out, "  %s: %s\n", f.Path, f.Skipped)
		}
	}
	return nil
}
