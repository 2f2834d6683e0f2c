// Package cli holds the conventions every trainscope command shares: its
// flag set and how --help and flag mistakes end (FlagSet, Parse,
// ErrHelp), the exit statuses (0 ok; 2 a usage error, bad input or a bad
// config; 1 anything else; 128+signal when a signal stopped the command:
// ExitCode, Exit), the context that SIGINT and SIGTERM cancel and the
// watch that ends a command that does not stop (SignalContext), and the
// small flags several commands take (--threads).
//
// It lives under internal/: it is the binary's own wiring. The packages
// that do a command's work (internal/analyze, internal/agent) return its
// UsageError and InputError to say which exit status a failure gets.
package cli
