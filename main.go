// Command trainscope tells why a training job is slow or wastes GPU memory,
// and what to change. One binary, a table of subcommands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trainscope/trainscope/internal/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type command struct {
	run     func(ctx context.Context, args []string, out, errOut io.Writer) error
	summary string
}

var commands = map[string]command{
	"agent":      {runAgent, "watch a torch.profiler folder on a training node and publish each finished trace"},
	"analyze":    {runAnalyze, "read PyTorch profiler traces, run the detectors, print a report"},
	"audit":      {runAudit, "check training launch scripts for slow or memory-wasting flags (perf-doctor)"},
	"diff":       {runDiff, "compare the kernels and operators of two runs or step windows"},
	"export":     {runExport, "write the analysed window as a Perfetto trace with the findings marked"},
	"profile":    {runProfile, "report on a CUDA memory snapshot (and a trace of the same rank)"},
	"publish":    {runPublish, "publish traces and memory snapshots to JetStream for a running server"},
	"report":     {runReport, "run the detectors again on a saved database and print the report"},
	"serve":      {runServe, "run the always-on pipeline: embedded NATS, ingestor, detectors, Flight SQL, HTTP"},
	"sql":        {runSQL, "run SQL on a database written by analyze --db"},
	"test-rules": {runTestRules, "run rule tests: detector input rows and the findings they must give"},
	"validate":   {runValidate, "check the config and every detector file"},
	"version":    {runVersion, "print the version"},
}

// usageError is a mistake on the command line; it exits with code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// inputError is bad input data; it exits with code 2.
type inputError struct{ err error }

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

func usage(w io.Writer) {
	fmt.Fprintf(w, "trainscope — why is this training job slow, and what should change?\n\nUsage:\n  trainscope <command> [flags] [args]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'trainscope <command> --help' for a command's flags.\n")
}

func main() {
	ctx, stop := signalContext()
	// TRAINSCOPE_CPUPROFILE=FILE writes a Go CPU profile of the command
	// (see bench/README.md).
	if path := os.Getenv("TRAINSCOPE_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			defer f.Close()
		}
	}
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	pprof.StopCPUProfile()
	stop()
	os.Exit(code)
}

// signalContext is cancelled by SIGINT or SIGTERM (its cause an
// *interrupted): long-running commands (serve, agent) stop cleanly on
// either, the others stop what they read and exit 128+signal. A second
// signal ends the process at once; so does the first when the command has
// not returned signalGrace after it (one stuck in a read that ignores the
// context). serve and agent, which take the time a clean stop needs, are
// ended only by a second signal. TRAINSCOPE_SIGNAL_GRACE (a duration; 0:
// wait for a second signal) changes the grace. stop releases the signals.
func signalContext() (context.Context, context.CancelFunc) {
	grace := signalGrace
	if v := os.Getenv("TRAINSCOPE_SIGNAL_GRACE"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			grace = max(d, 0)
		}
	}
	sw := &signalWatch{grace: grace, errOut: os.Stderr, exit: os.Exit, after: time.After}
	ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), signalKey{}, sw))
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go sw.watch(ch, done, cancel)
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel(context.Canceled)
		})
	}
}

// signalGrace is how long a command other than serve and agent has, after
// the first SIGINT or SIGTERM, to stop on its own.
const signalGrace = 3 * time.Second

// stopsOnItsOwn are the commands a first signal only asks to stop: they
// drain and save what they hold, however long that takes.
var stopsOnItsOwn = map[string]bool{"serve": true, "agent": true}

type signalKey struct{}

// signalWatch ends the process on the signals that its command did not
// stop on.
type signalWatch struct {
	mu      sync.Mutex
	command string
	grace   time.Duration // 0: only a second signal forces the exit
	errOut  io.Writer
	exit    func(code int)
	after   func(time.Duration) <-chan time.Time
}

// running says which command runs now, and so how long it has to stop.
func (w *signalWatch) running(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.command = name
	if stopsOnItsOwn[name] {
		w.grace = 0
	}
}

// watch cancels the context on the first signal, then exits on a second
// one or when the grace is over, unless done closes first.
func (w *signalWatch) watch(ch <-chan os.Signal, done <-chan struct{}, cancel context.CancelCauseFunc) {
	var sig os.Signal
	select {
	case sig = <-ch:
	case <-done:
		return
	}
	cause := &interrupted{sig}
	cancel(cause)
	w.mu.Lock()
	name, grace := w.command, w.grace
	w.mu.Unlock()
	if name == "" {
		name = "trainscope"
	}
	fmt.Fprintf(w.errOut, "trainscope: %s: stopping (a second signal exits at once)\n", cause)
	var timeout <-chan time.Time
	if grace > 0 {
		timeout = w.after(grace)
	}
	select {
	case again := <-ch:
		fmt.Fprintf(w.errOut, "trainscope: %s again (%s): exiting now\n", cause, signalName(again))
	case <-timeout:
		fmt.Fprintf(w.errOut, "trainscope: %s: %s did not stop within %s; exiting\n", cause, name, grace)
	case <-done:
		return
	}
	w.exit(cause.code())
}

// interrupted is the cause of a context a signal cancelled.
type interrupted struct{ sig os.Signal }

func (e *interrupted) Error() string { return "interrupted by " + signalName(e.sig) }

// code is the exit status of a process the signal ended: 128+signal, as a
// shell reports one (130 for SIGINT, 143 for SIGTERM).
func (e *interrupted) code() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	if len(args) == 0 {
		usage(errOut)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "--help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return exitCode(c.run(ctx, []string{"--help"}, out, errOut), errOut)
			}
		}
		usage(out)
		return 0
	case "-v", "--version":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(errOut, "trainscope: unknown command %q\n\n", name)
		usage(errOut)
		return 2
	}
	if sw, ok := ctx.Value(signalKey{}).(*signalWatch); ok {
		sw.running(name)
	}
	err := c.run(ctx, args[1:], out, errOut)
	var in *interrupted
	if err != nil && !errors.Is(err, errHelp) && errors.As(context.Cause(ctx), &in) {
		// what the command says is the cancellation, not its cause
		fmt.Fprintf(errOut, "trainscope: %s: %s\n", in, strings.TrimSpace(err.Error()))
		return in.code()
	}
	return exitCode(err, errOut)
}

// exitCode prints err as one line and maps it to the exit status: 0 ok,
// 2 bad usage, bad input or a bad config, 1 anything else.
func exitCode(err error, errOut io.Writer) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, errHelp) {
		return 0
	}
	msg := strings.TrimSpace(err.Error())
	fmt.Fprintf(errOut, "trainscope: %s\n", msg)
	var ue *usageError
	var ie *inputError
	var ce *config.Error
	if errors.As(err, &ue) || errors.As(err, &ie) || errors.As(err, &ce) {
		return 2
	}
	return 1
}

var errHelp = errors.New("help requested")

func runVersion(_ context.Context, args []string, out, _ io.Writer) error {
	if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
		fmt.Fprintln(out, "Usage: trainscope version\n\nPrints the version of this build.")
		return nil
	}
	fmt.Fprintf(out, "trainscope %s\n", version)
	return nil
}
