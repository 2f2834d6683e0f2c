package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/ingest/jsonscan"
	"github.com/trainscope/trainscope/ingest/watch"
	"github.com/trainscope/trainscope/stream/transport"
)

const agentHelp = `Usage: trainscope agent --run ID --watch DIR [flags]
       trainscope agent --runs-in DIR [flags]

For a training node: watches the folder torch.profiler writes into
(tensorboard_trace_handler) and publishes each trace, and each JSON memory
snapshot, once it is complete: its size and modification time have not
changed for agent.settle (5s) and it reads to the end. A file that turns out
to be cut short is tried again later. One that cannot be read (cut short
for good, corrupt, not a trace) is logged and retried until agent.give_up
(10m), then recorded as failed and skipped: the agent goes on with the
other files (with --once it exits 2 at the end, naming them).

What was published is recorded in a state file (default DIR/.trainscope-watch.json),
so a restarted agent publishes nothing twice; a file published again anyway
(a crash between publishing and recording) carries the same message ids and
is dropped downstream. Idle, it stats the folder every agent.poll (2s).

Trigger mode, like PerfTracker's: --wait N --steps M publishes only the rows
of ProfilerSteps N to N+M-1 of each trace.

GPU counters: while it watches, the agent samples this machine's GPUs
through NVML every --counters-period (100ms): SM and memory clocks, power
and its limit, temperature, utilisation, memory used, clock event
(throttle) reasons, PCIe and NVLink throughput, ECC and XID errors. With
CUDA_VISIBLE_DEVICES set it samples those GPUs, numbered as the training
processes see them. --counters URL scrapes a dcgm-exporter endpoint
instead (it refreshes every 30 s unless configured faster); --counters off
samples nothing. Without an NVIDIA driver it says so once and publishes
traces only. Counters go out as one batch every --counters-flush (5s).

One agent per GPU node for every job on it (a Kubernetes DaemonSet):
--runs-in DIR watches each subfolder DIR/<run id>/ as that run's traces
folder, for jobs that write their traces there; the GPU counters go to
the run whose folder changed last (a node trains one job at a time), and
are dropped while there is none.

Examples:
  trainscope agent --run llama-7b-0412 --watch /tmp/profiler
  trainscope agent --runs-in /var/lib/trainscope/traces --nats-url nats://nats:4222
  trainscope agent --run job42 --watch ./log --wait 10 --steps 3 --nats-url nats://nats.internal:4222
  trainscope agent --run job42 --watch ./log --counters http://localhost:9400/metrics --counters-period 1s

Flags:
`

func runAgent(ctx context.Context, args []string, out, errOut io.Writer) error {
	var n natsFlags
	fs := flagSet("agent", agentHelp, errOut)
	n.register(fs)
	dir := fs.String("watch", "", "folder torch.profiler writes traces into (required)")
	runsIn := fs.String("runs-in", "", "watch each subfolder of this folder as the run it is named after (instead of --run and --watch)")
	statePath := fs.String("state", "", "state file (default DIR/"+watch.DefaultStateName+")")
	wait := fs.Int("wait", -1, "trigger mode: first step to publish")
	steps := fs.Int("steps", 0, "trigger mode: how many steps to publish from --wait")
	once := fs.Bool("once", false, "publish what is there (waiting for files being written), then exit")
	counters := fs.String("counters", "nvml", "GPU counters: nvml, a dcgm-exporter URL, or off")
	period := fs.Duration("counters-period", 100*time.Millisecond, "how often to sample the GPU counters")
	flushAfter := fs.Duration("counters-flush", 5*time.Second, "how often to publish the samples taken")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	switch {
	case *runsIn != "" && (*dir != "" || n.run != ""):
		return &usageError{"agent: --runs-in DIR names the runs by their folders: give it without --run and --watch"}
	case *runsIn != "":
		n.run = "runs-in" // checked by connect; each folder names its own run
	case *dir == "":
		return &usageError{"agent: --watch DIR is required"}
	}
	if (*wait >= 0) != (*steps > 0) {
		return &usageError{"agent: --wait N and --steps M go together (M > 0)"}
	}
	if *period <= 0 || *flushAfter < *period {
		return &usageError{"agent: --counters-period must be positive and --counters-flush at least as long"}
	}
	cfg, nc, err := n.connect(ctx, "agent")
	if err != nil {
		return err
	}
	defer nc.Close()
	// An agent shares the node with training: keep its heap small.
	debug.SetGCPercent(50)
	logf := func(format string, a ...any) {
		fmt.Fprintf(errOut, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
	}
	pub, err := transport.NewPublisher(nc, cfg.Stream, cfg.Publish)
	if err != nil {
		return err
	}
	defer pub.Close(context.WithoutCancel(ctx))

	var one sync.Mutex // the publisher is one producer at a time; run folders take turns
	publishRun := func(run string) watch.Publisher {
		return func(ctx context.Context, path string) error {
			one.Lock()
			defer one.Unlock()
			return publishTrace(ctx, pub, run, n, *wait, *steps, path, errOut)
		}
	}
	wcfg := watch.Config{Dir: *dir, StatePath: *statePath, Poll: cfg.Agent.Poll, Settle: cfg.Agent.Settle, GiveUp: cfg.Agent.GiveUp}
	if *runsIn != "" {
		if fi, err := os.Stat(*runsIn); err != nil || !fi.IsDir() {
			return &usageError{fmt.Sprintf("agent: --runs-in %s: not a folder", *runsIn)}
		}
		rf := &runFolders{root: *runsIn, base: wcfg, publishFor: publishRun, logf: logf, started: map[string]bool{}}
		logf("agent: watching each run folder in %s, publishing to %s", *runsIn, nc.ConnectedUrlRedacted())
		if *once {
			return onceError(rf.scan(ctx, true))
		}
		n.run = ""
		stop := startCounters(ctx, nc, cfg, n, *counters, *period, *flushAfter, logf, rf.Latest)
		defer stop()
		return rf.run(ctx)
	}
	if err := wcfg.Validate(); err != nil {
		return &usageError{"agent: " + err.Error()}
	}
	logf("agent for run %s: watching %s, publishing to %s", n.run, *dir, nc.ConnectedUrlRedacted())
	if *once {
		return onceError(watch.Once(ctx, wcfg, publishRun(n.run), logf))
	}
	stop := startCounters(ctx, nc, cfg, n, *counters, *period, *flushAfter, logf, nil)
	defer stop()
	return watch.Run(ctx, wcfg, publishRun(n.run), logf)
}

// onceError is what agent --once returns for the files it recorded as
// failed, after publishing every other one: bad input (exit 2) when a
// file could not be read.
func onceError(err error) error {
	if err != nil && ingest.IsInputError(err) {
		return &inputError{err}
	}
	return err
}

// publishTrace publishes one trace file of run (only steps wait to
// wait+steps-1 when steps > 0).
func publishTrace(ctx context.Context, pub *transport.Publisher, run string, n natsFlags, wait, steps int, path string, errOut io.Writer) error {
	salt := ""
	var sink ingest.Sink = &ingest.PublishSink{P: pub, RunID: run, Host: n.host}
	if steps > 0 {
		salt = fmt.Sprintf("steps %d-%d", wait, wait+steps-1)
		sink = &ingest.StepFilter{Next: &ingest.PublishSink{P: pub, RunID: run, Host: n.host, Salt: salt},
			Lo: int32(wait), Hi: int32(wait + steps - 1)}
	}
	_, err := ingest.Read(ctx, sink, []string{path}, ingest.Options{RunID: run, Host: n.host, Rank: -1, Workers: 1, GPU: n.gpu, Warn: warnTo(errOut)})
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
