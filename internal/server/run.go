package server

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/internal/config"
)

// Flags are 'trainscope serve's flags: the config file, and the values
// that override its keys where given.
type Flags struct {
	Config                string
	DataDir, HTTP, Flight string // Flight "off": no Flight SQL
	NATSURL, NATSListen   string
	Archive               string
	Quiet                 time.Duration // serve.quiet (and at least serve.timeout)
	Threads               int
	QueryOnly, Insecure   bool
}

// Run is 'trainscope serve': it loads the config with f over it, loads
// the detectors, starts the pipeline (or, with serve.query_only, the
// query node), says on log where it listens, serves until ctx ends, then
// shuts down.
func Run(ctx context.Context, f Flags, log io.Writer, opts ...Option) error {
	cfg, err := config.Load(f.Config)
	if err != nil {
		return err
	}
	if err := cli.ApplyThreads(cfg, "serve", f.Threads); err != nil {
		return err
	}
	cli.Override(&cfg.Serve.DataDir, f.DataDir)
	cli.Override(&cfg.Serve.HTTP, f.HTTP)
	cli.Override(&cfg.Serve.Flight, f.Flight)
	if cfg.Serve.Flight == "off" {
		cfg.Serve.Flight = ""
	}
	cli.Override(&cfg.NATS.URL, f.NATSURL)
	if f.Insecure {
		cfg.Serve.Insecure = true
	}
	cli.Override(&cfg.Serve.Archive, f.Archive)
	if f.QueryOnly {
		cfg.Serve.QueryOnly = true
	}
	cli.Override(&cfg.NATS.Listen, f.NATSListen)
	if f.Quiet > 0 {
		cfg.Serve.Quiet = f.Quiet
		cfg.Serve.Timeout = max(cfg.Serve.Timeout, f.Quiet)
	}
	if err := cfg.Validate(); err != nil {
		return cli.Usage("serve: " + err.Error())
	}
	set, err := detectors.NewSet(cfg.DetectorsConfig())
	if err != nil {
		return cli.Input(err)
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(log, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
	}
	if cfg.Serve.QueryOnly {
		srv, err := StartQueryNode(ctx, cfg, logf, opts...)
		if err != nil {
			return err
		}
		logf("query node: Flight SQL %s, HTTP http://%s over the archive %s", orOff(srv.FlightAddr()), srv.HTTPAddr(), cfg.Serve.Archive)
		<-ctx.Done()
		logf("stopping")
		return srv.Shutdown()
	}
	srv, err := Start(ctx, cfg, set, logf, opts...)
	if err != nil {
		return err
	}
	logf("serving: NATS %s, Flight SQL %s, HTTP http://%s (data in %s)", srv.NATSURL(), orOff(srv.FlightAddr()), srv.HTTPAddr(), cfg.Serve.DataDir)
	<-ctx.Done()
	logf("stopping")
	return srv.Shutdown()
}

func orOff(s string) string {
	if s == "" {
		return "off"
	}
	return s
}
