package odwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"

	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/ondemand"
	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
)

// TriggerHelp is 'trainscope trigger --help'.
const TriggerHelp = `Usage: trainscope trigger --run ID [--steps N] [--wait M] [flags]

Asks every agent of run ID that runs with --on-demand to capture a trace
of the run's PyTorch processes (those started with KINETO_USE_DAEMON=1),
without touching the job's code: each process traces N steps (default 5)
from the next step that is a multiple of M (default 10), so every rank
traces the same steps; --duration traces a length of time instead. The
agents publish the traces, each under the rank of the process that wrote
it, and serve analyses them like any other.

The request goes over NATS (nats.url, TRAINSCOPE_NATS_URL or --nats-url)
to every agent of the run; the answers are gathered for --timeout (5s),
or until --agents of them came, and printed one line an agent: the host,
and the processes and ranks it configured, or why it refused (no process
of the run registered, a capture of the run already in flight, a request
over its limits). Exit status 0 when at least one agent accepted, 1 when
none did or none answered, 2 on bad usage.

With serve's embedded NATS locked down (nats.server.user or nkeys), the
agents' credentials may not send triggers: ask serve instead, with its
token: POST /runs/ID/trigger.

Examples:
  trainscope trigger --run llama-7b-0412
  trainscope trigger --run job42 --steps 3 --wait 100 --nats-url nats://nats.internal:4222
  trainscope trigger --run job42 --duration 10s --agents 8

Flags:
`

// TriggerOptions are 'trainscope trigger's flags.
type TriggerOptions struct {
	Config, URL, Run string
	Steps, Wait      int
	Duration         time.Duration
	Timeout          time.Duration
	Agents           int // stop gathering after this many answers
	Shapes, Stacks   bool
	Memory           bool
	Now              func() time.Time // tests
}

// TriggerFlags defines 'trainscope trigger's flags on fs.
func TriggerFlags(fs *pflag.FlagSet, o *TriggerOptions, configHelp string) {
	fs.StringVar(&o.Run, "run", "", "run id (required)")
	fs.IntVar(&o.Steps, "steps", 0, "steps to trace (default 5)")
	fs.IntVar(&o.Wait, "wait", 0, "start on the next step that is a multiple of this (default 10)")
	fs.DurationVar(&o.Duration, "duration", 0, "trace this long instead of steps")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Second, "how long to gather the agents' answers")
	fs.IntVar(&o.Agents, "agents", 0, "stop once this many agents answered (0: wait the whole --timeout)")
	fs.BoolVar(&o.Shapes, "shapes", false, "record input shapes")
	fs.BoolVar(&o.Stacks, "stacks", false, "record Python stacks")
	fs.BoolVar(&o.Memory, "memory", false, "record memory allocations")
	fs.StringVar(&o.URL, "nats-url", "", "NATS server URL (default: nats.url, else the local serve)")
	fs.StringVar(&o.Config, "config", "", configHelp)
}

// Trigger is 'trainscope trigger': it asks the run's agents for a
// capture and prints their answers on out.
func Trigger(ctx context.Context, o TriggerOptions, args []string, out io.Writer) error {
	switch {
	case len(args) > 0:
		return cli.Usage("trigger: takes no arguments (see 'trainscope trigger --help')")
	case o.Run == "":
		return cli.Usage("trigger: --run ID is required: the run whose processes to capture")
	case o.Steps > 0 && o.Duration > 0:
		return cli.Usage("trigger: give --steps or --duration, not both")
	case o.Timeout <= 0:
		return cli.Usage("trigger: --timeout must be positive")
	case o.Agents < 0 || o.Steps < 0 || o.Wait < 0 || o.Duration < 0:
		return cli.Usage("trigger: --agents, --steps, --wait and --duration may not be negative")
	}
	if err := stream.CheckRunID(o.Run); err != nil {
		return cli.Usage("trigger: --run: " + err.Error())
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	m := ondemand.NewTrigger(o.Run, o.Steps, o.Wait, requester(), now())
	if o.Duration > 0 {
		m.Steps, m.Wait, m.DurationMS = 0, 0, o.Duration.Milliseconds()
	}
	m.Shapes, m.Stacks, m.Memory = o.Shapes, o.Stacks, o.Memory
	if err := m.Check(ondemand.Limits{}); err != nil {
		return cli.Usage(err.Error())
	}
	cfg, err := config.Load(o.Config)
	if err != nil {
		return err
	}
	cli.Override(&cfg.NATS.URL, o.URL)
	if err := cfg.Validate(); err != nil {
		return cli.Usage("trigger: " + err.Error())
	}
	nc, err := transport.Connect(cfg.NATS, "trainscope-trigger")
	if err != nil {
		return err
	}
	defer nc.Close()
	replies, err := ondemand.Ask(ctx, nc, cfg.Stream.Cluster, m, ondemand.Limits{}, o.Agents, o.Timeout)
	switch {
	case errors.Is(err, ondemand.ErrNoAgents):
		return fmt.Errorf("%w: is 'trainscope agent --on-demand --run %s' running on the run's nodes?", err, o.Run)
	case errors.Is(err, nats.ErrPermissionViolation):
		return fmt.Errorf("%w: this NATS user may not send triggers; ask serve: POST /runs/%s/trigger", err, o.Run)
	case err != nil:
		return err
	}
	fmt.Fprintf(out, "capture %s of run %s: %s\n", m.ID, o.Run, describe(m))
	PrintReplies(out, replies)
	ok := ondemand.Accepted(replies)
	switch {
	case len(replies) == 0:
		return fmt.Errorf("no agent of run %s answered within %s", o.Run, o.Timeout)
	case ok == 0:
		return fmt.Errorf("none of the %d agent(s) that answered took the capture", len(replies))
	}
	fmt.Fprintf(out, "%d of %d agent(s) accepted; the traces are published once the processes have written them\n", ok, len(replies))
	return nil
}

func describe(m ondemand.TriggerMessage) string {
	if m.Steps > 0 {
		return fmt.Sprintf("%d step(s) from the next step that is a multiple of %d", m.Steps, max(m.Wait, 1))
	}
	return fmt.Sprintf("%v", time.Duration(m.DurationMS)*time.Millisecond)
}

// PrintReplies prints one line an agent, by host.
func PrintReplies(out io.Writer, replies []ondemand.TriggerReply) {
	for _, r := range replies {
		host := r.Host
		if host == "" {
			host = "(unnamed agent)"
		}
		if r.Error != "" {
			fmt.Fprintf(out, "  %s: refused: %s\n", host, r.Error)
			continue
		}
		parts := make([]string, len(r.Processes))
		for i, pid := range r.Processes {
			rank := "?"
			if i < len(r.Ranks) {
				rank = rankText(r.Ranks[i])
			}
			parts[i] = fmt.Sprintf("pid %d rank %s", pid, rank)
		}
		fmt.Fprintf(out, "  %s: accepted: %d process(es): %s\n", host, len(parts), strings.Join(parts, ", "))
	}
}

// requester is who asks: "cli user@host".
func requester() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return "cli " + name + "@" + host
}
