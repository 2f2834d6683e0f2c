package agent

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

	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/ingest/jsonscan"
	"github.com/trainscope/trainscope/ingest/watch"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
)

// ConnOptions are the connection flags publish and agent share: the
// config, the server, and the run, host and GPU model their batches
// record.
type ConnOptions struct {
	Config, URL, Host, Run, GPU string
}

// Connect checks c, loads the config, connects, and finds (or creates)
// the stream; cmd names the command in errors and the connection. An
// empty c.Host becomes this machine's name.
func Connect(ctx context.Context, cmd string, c *ConnOptions) (*config.Config, *nats.Conn, error) {
	if c.Run == "" {
		return nil, nil, cli.Usage(cmd + ": --run ID is required: every batch belongs to a run")
	}
	if err := stream.CheckRunID(c.Run); err != nil {
		return nil, nil, cli.Usage(cmd + ": --run: " + err.Error())
	}
	if c.Host == "" {
		c.Host, _ = os.Hostname()
	}
	if c.GPU != "" {
		if _, ok := gpu.Lookup(c.GPU); !ok {
			return nil, nil, cli.Usage(fmt.Sprintf("%s: --gpu %q is not in the GPU catalog (known: %s)", cmd, c.GPU, strings.Join(gpu.Keys(), ", ")))
		}
	}
	cfg, err := config.Load(c.Config)
	if err != nil {
		return nil, nil, err
	}
	cli.Override(&cfg.NATS.URL, c.URL)
	if err := cfg.Validate(); err != nil {
		return nil, nil, cli.Usage(cmd + ": " + err.Error())
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

// PublishOptions are 'trainscope publish's flags.
type PublishOptions struct {
	Conn    ConnOptions
	Rank    int  // for a trace that names none (-1: none)
	Quiet   bool // no progress
	SkipBad bool // go on past a file that cannot be read
}

// PublishFiles reads the traces and snapshots at paths (files or folders)
// and publishes them to the stream, then says what went out on out:
// 'trainscope publish'.
func PublishFiles(ctx context.Context, paths []string, o PublishOptions, out, errOut io.Writer) error {
	if len(paths) == 0 {
		return cli.Usage("publish: give trace files or folders (see 'trainscope publish --help')")
	}
	files, err := ingest.DiscoverWith(paths, cli.Warn(errOut))
	if err != nil {
		return cli.Input(err)
	}
	n := &o.Conn
	cfg, nc, err := Connect(ctx, "publish", n)
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
	if !o.Quiet {
		progress = errOut
	}
	sink := &ingest.PublishSink{P: pub, RunID: n.Run, Host: n.Host}
	stats, err := ingest.Read(ctx, sink, files, ingest.Options{RunID: n.Run, Host: n.Host, Rank: o.Rank, Progress: progress, GPU: n.GPU, Warn: cli.Warn(errOut), SkipBad: o.SkipBad})
	if cerr := pub.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		if ingest.IsInputError(err) {
			return cli.Input(err)
		}
		return err
	}
	took := time.Since(t0)
	rows := pub.Stats.Rows.Load()
	bad := stats.Bad()
	fmt.Fprintf(out, "published run %s: %d files, %d rows in %d messages (%.1f MB) to %s in %s (%.0f rows/s)\n",
		n.Run, len(stats.Files)-len(bad), rows, pub.Stats.Messages.Load(), float64(pub.Stats.Bytes.Load())/1e6,
		nc.ConnectedUrlRedacted(), took.Round(time.Millisecond), float64(rows)/took.Seconds())
	if len(bad) > 0 {
		fmt.Fprintf(out, "skipped %d file(s) that could not be read (--skip-bad):\n", len(bad))
		for _, f := range bad {
			fmt.Fprintf(out, "  %s: %s\n", f.Path, f.Skipped)
		}
	}
	return nil
}

// publishTrace publishes one trace file of run (only steps wait to
// wait+steps-1 when steps > 0), rank its rank when it names none (-1:
// none).
func publishTrace(ctx context.Context, pub *transport.Publisher, run string, n ConnOptions, wait, steps, rank int, path string, errOut io.Writer) error {
	salt := ""
	var sink ingest.Sink = &ingest.PublishSink{P: pub, RunID: run, Host: n.Host}
	if steps > 0 {
		salt = fmt.Sprintf("steps %d-%d", wait, wait+steps-1)
		sink = &ingest.StepFilter{Next: &ingest.PublishSink{P: pub, RunID: run, Host: n.Host, Salt: salt},
			Lo: int32(wait), Hi: int32(wait + steps - 1)}
	}
	_, err := ingest.Read(ctx, sink, []string{path}, ingest.Options{RunID: run, Host: n.Host, Rank: rank, Workers: 1, GPU: n.GPU, Warn: cli.Warn(errOut)})
	if err == nil {
		err = pub.Flush(ctx)
	}
	switch {
	case jsonscan.IsTruncated(err):
		return fmt.Errorf("%w: %w", watch.ErrIncomplete, err)
	}
	// Any other error is logged and the file tried again with backoff
	// until agent.give_up, then recorded as failed and skipped: one bad
	// file never stops the agent, which goes on with the others.
	return err // the watcher logs what was published
}
