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
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type command struct {
	run     func(ctx context.Context, args []string, out, errOut io.Writer) error
	summary string
}

var commands = map[string]command{
	"agent":    {runAgent, "watch a torch.profiler folder on a training node and publish each finished trace"},
	"analyze":  {runAnalyze, "read PyTorch profiler traces, run the detectors, print a report"},
	"audit":    {runAudit, "check training launch scripts for slow or memory-wasting flags (perf-doctor)"},
	"diff":     {runDiff, "compare the kernels and operators of two runs or step windows"},
	"export":   {runExport, "write the analysed window as a Perfetto trace with the findings marked"},
	"profile":  {runProfile, "report on a CUDA memory snapshot (and a trace of the same rank)"},
	"publish":  {runPublish, "publish traces and memory snapshots to JetStream for a running server"},
	"report":   {runReport, "run the detectors again on a saved database and print the report"},
	"serve":    {runServe, "run the always-on pipeline: embedded NATS, ingestor, detectors, Flight SQL, HTTP"},
	"sql":      {runSQL, "run SQL on a database written by analyze --db"},
	"validate": {runValidate, "check the config and every detector file"},
	"version":  {runVersion, "print the version"},
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
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
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

// signalContext is cancelled by SIGINT or SIGTERM: long-running commands
// (serve, agent) stop cleanly on either.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
	return exitCode(c.run(ctx, args[1:], out, errOut), errOut)
}

// exitCode prints err as one line and maps it to the exit status: 0 ok,
// 2 bad usage or bad input, 1 anything else.
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
	if errors.As(err, &ue) || errors.As(err, &ie) {
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
