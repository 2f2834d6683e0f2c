package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/pflag"
	"github.com/trainscope/trainscope/ingest/watch"
	"github.com/trainscope/trainscope/internal/agent"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/internal/ondemand/odwire"
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

--on-demand: trace KINETO_USE_DAEMON=1 jobs on 'trainscope trigger' (README).

Examples:
  trainscope agent --run llama-7b-0412 --watch /tmp/profiler
  trainscope agent --runs-in /var/lib/trainscope/traces --nats-url nats://nats:4222
  trainscope agent --run job42 --watch ./log --wait 10 --steps 3 --nats-url nats://nats.internal:4222
  trainscope agent --run job42 --watch ./log --counters http://localhost:9400/metrics --counters-period 1s

Flags:
`

func runAgent(ctx context.Context, args []string, out, errOut io.Writer) error {
	o := agent.Options{Log: errOut}
	fs := cli.FlagSet("agent", agentHelp, errOut)
	connFlags(fs, &o.Conn)
	fs.StringVar(&o.Dir, "watch", "", "folder torch.profiler writes traces into (required)")
	fs.StringVar(&o.RunsIn, "runs-in", "", "watch each subfolder of this folder as the run it is named after (instead of --run and --watch)")
	fs.StringVar(&o.StatePath, "state", "", "state file (default DIR/"+watch.DefaultStateName+")")
	fs.IntVar(&o.Wait, "wait", -1, "trigger mode: first step to publish")
	fs.IntVar(&o.Steps, "steps", 0, "trigger mode: how many steps to publish from --wait")
	fs.BoolVar(&o.Once, "once", false, "publish what is there (waiting for files being written), then exit")
	fs.StringVar(&o.Counters.From, "counters", "nvml", "GPU counters: nvml, a dcgm-exporter URL, or off")
	fs.DurationVar(&o.Counters.Period, "counters-period", 100*time.Millisecond, "how often to sample the GPU counters")
	fs.DurationVar(&o.Counters.Flush, "counters-flush", 5*time.Second, "how often to publish the samples taken")
	od := &odwire.Source{}
	fs.BoolVar(&od.Enable, "on-demand", false, "capture traces of this node's KINETO_USE_DAEMON=1 processes on a trigger (agent.on_demand.enabled)")
	if err := cli.Parse(fs, args, out); err != nil {
		return err
	}
	od.Run, o.Sources = o.Conn.Run, append(o.Sources, od)
	return agent.Run(ctx, o)
}

func runTrigger(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, o := cli.FlagSet("trigger", odwire.TriggerHelp, errOut), &odwire.TriggerOptions{}
	odwire.TriggerFlags(fs, o, configHelp)
	if err := cli.Parse(fs, args, out); err != nil {
		return err
	}
	return odwire.Trigger(ctx, *o, fs.Args(), out)
}

// connFlags are the connection flags publish and agent share.
func connFlags(fs *pflag.FlagSet, c *agent.ConnOptions) {
	fs.StringVar(&c.Run, "run", "", "run id (required)")
	fs.StringVar(&c.Host, "host", "", "host name to record (default: this machine's name)")
	fs.StringVar(&c.URL, "nats-url", "", "NATS server URL (default: nats.url, else the local serve)")
	fs.StringVar(&c.Config, "config", "", configHelp)
	fs.StringVar(&c.GPU, "gpu", "", "GPU model when the traces do not say (a catalog key such as H100-SXM)")
}
