package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/ingest/watch"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/stream/transport"
)

// Options are what the agent watches, publishes and samples: 'trainscope
// agent's flags, and the sources of traces besides the folders.
type Options struct {
	Conn      ConnOptions // the server, and the run, host and GPU to record
	Dir       string      // the folder of one run's traces (--watch)
	StatePath string      // what was published (default Dir/.trainscope-watch.json)
	RunsIn    string      // a folder of run folders, instead of Dir
	// Trigger mode: publish only ProfilerSteps Wait to Wait+Steps-1
	// (Steps 0: every step).
	Wait, Steps int
	Once        bool // publish what is there, then return
	Counters    CounterOptions
	// Sources are more sources of traces, watched beside the folder.
	Sources []Source
	Log     io.Writer // the agent's log, a timestamped line an event
}

// CounterOptions say which GPU counters the agent samples, how often, and
// how often it publishes them.
type CounterOptions struct {
	From          string // nvml, a dcgm-exporter URL, or off
	Period, Flush time.Duration
}

// A Source hands the agent complete trace files to publish.
type Source interface {
	// Watch hands each complete trace file to n.Publish until ctx ends;
	// with once, the files there now, then it returns the failures.
	Watch(ctx context.Context, n Node, once bool) error
}

// Node is what the agent gives its sources: the NATS connection (where an
// on-demand capture hears its triggers), the config, the host, the
// publisher and the log.
type Node struct {
	Conn    *nats.Conn
	Config  *config.Config
	Host    string
	Publish PublishFunc
	// PublishCapture publishes a trace a source asked a process for (an
	// on-demand capture): all of it (no trigger-mode step filter), with
	// rank as the trace's rank when it names none (on-demand traces carry
	// no distributedInfo; -1: none).
	PublishCapture func(ctx context.Context, run, path string, rank int) error
	Logf           func(format string, args ...any)
}

// PublishFunc publishes one complete trace file of run; the agent's
// sources take turns at its one publisher.
type PublishFunc func(ctx context.Context, run, path string) error

// Run connects and publishes the traces of o's folder (or run folders)
// and of o.Sources, sampling the GPU counters beside them, until ctx ends
// (with o.Once, what is there now): 'trainscope agent'.
func Run(ctx context.Context, o Options) error {
	switch {
	case o.RunsIn != "" && (o.Dir != "" || o.Conn.Run != ""):
		return cli.Usage("agent: --runs-in DIR names the runs by their folders: give it without --run and --watch")
	case o.RunsIn != "":
		o.Conn.Run = "runs-in" // checked by Connect; each folder names its own run
	case o.Dir == "":
		return cli.Usage("agent: --watch DIR is required")
	}
	if (o.Wait >= 0) != (o.Steps > 0) {
		return cli.Usage("agent: --wait N and --steps M go together (M > 0)")
	}
	if o.Counters.Period <= 0 || o.Counters.Flush < o.Counters.Period {
		return cli.Usage("agent: --counters-period must be positive and --counters-flush at least as long")
	}
	cfg, nc, err := Connect(ctx, "agent", &o.Conn)
	if err != nil {
		return err
	}
	defer nc.Close()
	// An agent shares the node with training: keep its heap small.
	debug.SetGCPercent(50)
	logf := func(format string, a ...any) {
		fmt.Fprintf(o.Log, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
	}
	pub, err := transport.NewPublisher(nc, cfg.Stream, cfg.Publish)
	if err != nil {
		return err
	}
	defer pub.Close(context.WithoutCancel(ctx))

	var one sync.Mutex // the publisher is one producer at a time; sources take turns
	node := Node{Conn: nc, Config: cfg, Host: o.Conn.Host, Logf: logf, Publish: func(ctx context.Context, run, path string) error {
		one.Lock()
		defer one.Unlock()
		return publishTrace(ctx, pub, run, o.Conn, o.Wait, o.Steps, -1, path, o.Log)
	}}
	node.PublishCapture = func(ctx context.Context, run, path string, rank int) error {
		one.Lock()
		defer one.Unlock()
		return publishTrace(ctx, pub, run, o.Conn, -1, 0, rank, path, o.Log)
	}
	wcfg := watch.Config{Dir: o.Dir, StatePath: o.StatePath, Poll: cfg.Agent.Poll, Settle: cfg.Agent.Settle, GiveUp: cfg.Agent.GiveUp}
	var first Source
	if o.RunsIn != "" {
		if fi, err := os.Stat(o.RunsIn); err != nil || !fi.IsDir() {
			return cli.Usage(fmt.Sprintf("agent: --runs-in %s: not a folder", o.RunsIn))
		}
		first = &runFolders{root: o.RunsIn, base: wcfg, logf: logf, started: map[string]bool{}}
		logf("agent: watching each run folder in %s, publishing to %s", o.RunsIn, nc.ConnectedUrlRedacted())
		o.Conn.Run = "" // the counters go to the run whose folder changed last
	} else {
		if err := wcfg.Validate(); err != nil {
			return cli.Usage("agent: " + err.Error())
		}
		first = folder{run: o.Conn.Run, cfg: wcfg}
		logf("agent for run %s: watching %s, publishing to %s", o.Conn.Run, o.Dir, nc.ConnectedUrlRedacted())
	}
	if o.Once {
		err := first.Watch(ctx, node, true)
		for _, s := range o.Sources {
			err = errors.Join(err, s.Watch(ctx, node, true))
		}
		return onceError(err)
	}
	var runOf func() string
	if l, ok := first.(interface{ Latest() string }); ok {
		runOf = l.Latest
	}
	stop := startCounters(ctx, nc, cfg, o.Conn, o.Counters, logf, runOf)
	defer stop()
	return watchAll(ctx, node, append([]Source{first}, o.Sources...))
}

// watchAll watches every source at once until ctx ends or one returns.
func watchAll(ctx context.Context, n Node, sources []Source) error {
	if len(sources) == 1 {
		return sources[0].Watch(ctx, n, false)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(sources))
	var wg sync.WaitGroup
	for i, s := range sources {
		wg.Go(func() {
			errs[i] = s.Watch(ctx, n, false)
			cancel()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// folder is one run's traces folder (--watch).
type folder struct {
	run string
	cfg watch.Config
}

func (f folder) Watch(ctx context.Context, n Node, once bool) error {
	pub := func(ctx context.Context, path string) error { return n.Publish(ctx, f.run, path) }
	if once {
		return watch.Once(ctx, f.cfg, pub, n.Logf)
	}
	return watch.Run(ctx, f.cfg, pub, n.Logf)
}

// onceError is what agent --once returns for the files it recorded as
// failed, after publishing every other one: bad input (exit 2) when a
// file could not be read.
func onceError(err error) error {
	if err != nil && ingest.IsInputError(err) {
		return cli.Input(err)
	}
	return err
}
