// Command trainscope tells why a training job is slow or wastes GPU memory,
// and what to change. One binary, a table of subcommands.
package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/pprof"
	"slices"

	"github.com/trainscope/trainscope/internal/cli"
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
	"trigger":    {runTrigger, "ask a run's agents (--on-demand) to capture a trace of its PyTorch processes now"},
	"validate":   {runValidate, "check the config and every detector file"},
	"version":    {runVersion, "print the version"},
}

// Flag helps several commands share.
const (
	configHelp    = "config file (YAML, TOML or JSON); also TRAINSCOPE_CONFIG"
	detectorsHelp = "extra folder of .sql detectors (repeatable)"
	fullHelp      = "markdown: append every metric table and every finding in full (JSON and HTML always have them)"
	formatHelp    = "report format: md, json or html (one self-contained page)"
	quietHelp     = "no progress on stderr"
	outHelp       = "write the report to this file instead of stdout"
	rankHelp      = "rank for a trace that names none in distributedInfo or its file name"
)

func usage(w io.Writer) {
	fmt.Fprintf(w, "trainscope — why is this training job slow, and what should change?\n\nUsage:\n  trainscope <command> [flags] [args]\n\nCommands:\n")
	names := slices.Sorted(maps.Keys(commands))
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
	ctx, stop := cli.SignalContext()
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
	// TRAINSCOPE_ALLOCPROFILE=FILE writes the Go allocation profile at exit
	// (go tool pprof -sample_index=alloc_space).
	if path := os.Getenv("TRAINSCOPE_ALLOCPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	stop()
	os.Exit(code)
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
				return cli.ExitCode(c.run(ctx, []string{"--help"}, out, errOut), errOut)
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
	cli.Running(ctx, name)
	return cli.Exit(ctx, c.run(ctx, args[1:], out, errOut), errOut)
}

func runVersion(_ context.Context, args []string, out, _ io.Writer) error {
	if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
		fmt.Fprintln(out, "Usage: trainscope version\n\nPrints the version of this build.")
		return nil
	}
	fmt.Fprintf(out, "trainscope %s\n", version)
	return nil
}
