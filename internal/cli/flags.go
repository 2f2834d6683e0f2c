package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/trainscope/trainscope/internal/config"
)

// FlagSet is a command's flag set: its usage is help followed by the
// flags' defaults, written to errOut until Parse sees --help.
func FlagSet(name string, help string, errOut io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), help)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args and turns --help and flag errors into the right
// exit codes: --help prints the usage on out and returns ErrHelp, a bad
// flag is a *UsageError.
func Parse(fs *pflag.FlagSet, args []string, out io.Writer) error {
	for _, a := range args {
		if a == "--help" || a == "-h" {
			fs.SetOutput(out)
			fs.Usage()
			return ErrHelp
		}
	}
	if err := fs.Parse(args); err != nil {
		return &UsageError{err.Error()}
	}
	return nil
}

// ThreadsVar adds --threads to fs, into p; ApplyThreads copies it into
// the config.
func ThreadsVar(fs *pflag.FlagSet, p *int) {
	fs.IntVar(p, "threads", 0, "cores to plan for: files read at once, detectors side by side, DuckDB threads (default: the threads key, else GOMAXPROCS)")
}

// ApplyThreads puts a --threads value (0: not given) into c, checked as
// the threads key is.
func ApplyThreads(c *config.Config, cmd string, n int) error {
	if n == 0 {
		return nil
	}
	if n < 0 || n > config.MaxThreads {
		return &UsageError{fmt.Sprintf("%s: --threads %d: want 1 to %d", cmd, n, config.MaxThreads)}
	}
	c.Threads = n
	return nil
}

// Override sets *dst to v when a flag gave one.
func Override(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

// Warn writes the readers' warnings (repaired input) to w, one a line.
func Warn(w io.Writer) func(string) {
	return func(line string) { fmt.Fprintf(w, "trainscope: warning: %s\n", line) }
}
