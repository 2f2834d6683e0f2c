package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/internal/server"
	"github.com/trainscope/trainscope/sql/archive"
	"github.com/trainscope/trainscope/stream/transport"
)

const serveHelp = `Usage: trainscope serve [flags]

Runs the always-on pipeline in one process: an embedded NATS server with
JetStream (file storage under the data folder), the ingestor (commit to
DuckDB, then ack), the detector scheduler, a read-only Arrow Flight SQL
endpoint, and an HTTP port with /healthz, /metrics and the latest report of
every run (/runs, /runs/ID/report, /runs/ID/report.json).

With nats.url set (config file, TRAINSCOPE_NATS_URL or --nats-url) it uses
that NATS cluster instead of starting one; credentials come from nats.user
and nats.password, nats.nkey, or nats.creds, TLS from nats.tls.*.

Several ingestors: with stream.partitions N > 1 (the same N on every
ingestor of a stream) the stream puts each run in one of N partitions,
and each 'trainscope serve' sharing the stream (nats.url) holds leases on
about N / ingestors of them; it analyses the runs it claims, and forwards
to their owner the batches of runs another ingestor claimed. Give each a
stable, unique ingest.member (default: the host name): a restarted
ingestor must come back under its name to keep its runs.

The fleet archive: with serve.archive (--archive DIR) every ingestor
writes each run it analyses, its events and findings, as Parquet under
DIR/<table>/day=YYYY-MM-DD/run=<run>/ (hive partitions Trino and Spark
read; bytes of the run id outside [A-Za-z0-9_-] written %XX). DIR may be s3://bucket/prefix, reached as serve.archive_s3 says
(endpoint, region, insecure; keys from AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY). 'trainscope serve --query-only --archive DIR' is
the query node: Flight SQL over every ingestor's runs, no NATS and no
ingestor of its own (a bucket is mirrored under its data folder).

Send it data with 'trainscope publish' or 'trainscope agent'; query it with
'trainscope sql --server ADDR' or any Flight SQL client.

Security: by default every port listens on 127.0.0.1 only. To listen on a
network, give clients credentials to prove: nats.server.user/password or
nats.server.nkeys for the embedded NATS (publishers may then only publish),
serve.auth.token_file (a bearer token) and serve.tls.cert/key (with
serve.tls.client_ca for client certificates) for Flight SQL and HTTP.
serve refuses to listen beyond loopback without them unless --insecure.
Each Flight SQL query is bounded by serve.query.timeout (1m),
serve.query.max_rows (1,000,000) and the database's memory limit
(serve.query.memory_limit, default a quarter of RAM).

Examples:
  trainscope serve
  trainscope serve --data-dir /var/lib/trainscope --http :7070 --flight :7071 \
      --config /etc/trainscope/serve.yaml    # with serve.auth.token_file and nats.server.user
  TRAINSCOPE_NATS_URL=nats://nats.internal:4222 trainscope serve
  trainscope serve --archive /mnt/archive             # an ingestor that archives
  trainscope serve --query-only --archive /mnt/archive --http :7080 --flight :7081

Flags:
`

func runServe(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flagSet("serve", serveHelp, errOut)
	configPath := fs.String("config", "", "config file (YAML, TOML or JSON); also TRAINSCOPE_CONFIG")
	dataDir := fs.String("data-dir", "", "folder for the database, JetStream storage and reports (default "+defaultServe.DataDir+")")
	httpAddr := fs.String("http", "", "HTTP address for /healthz, /metrics and reports (default "+defaultServe.HTTP+")")
	flightAddr := fs.String("flight", "", "Flight SQL address, or 'off' (default "+defaultServe.Flight+")")
	natsURL := fs.String("nats-url", "", "use this NATS cluster instead of the embedded server")
	natsListen := fs.String("nats-listen", "", "embedded NATS client address (default "+transport.DefaultNATS.Listen+")")
	quiet := fs.Duration("quiet", 0, "analyze a run once it has received nothing this long (default 2s)")
	archiveDir := fs.String("archive", "", "fleet archive, a folder or s3://bucket/prefix: write every analysed run there as Parquet (serve.archive)")
	queryOnly := fs.Bool("query-only", false, "serve Flight SQL over the --archive of every ingestor; no NATS, ingestor or detectors")
	threads := threadsFlag(fs)
	insecure := fs.Bool("insecure", false, "listen beyond loopback without authentication (serve.insecure): anyone who reaches the ports may publish and read")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &usageError{"serve: takes no arguments (see 'trainscope serve --help')"}
	}
	cfg, err := loadConfig(*configPath)
	if err != nil {
		return err
	}
	if err := cfg.applyThreads("serve", *threads); err != nil {
		return err
	}
	override(&cfg.Serve.DataDir, *dataDir)
	override(&cfg.Serve.HTTP, *httpAddr)
	override(&cfg.Serve.Flight, *flightAddr)
	if cfg.Serve.Flight == "off" {
		cfg.Serve.Flight = ""
	}
	override(&cfg.NATS.URL, *natsURL)
	if *insecure {
		cfg.Serve.Insecure = true
	}
	override(&cfg.Serve.Archive, *archiveDir)
	if *queryOnly {
		cfg.Serve.QueryOnly = true
	}
	override(&cfg.NATS.Listen, *natsListen)
	if *quiet > 0 {
		cfg.Serve.Quiet = *quiet
		cfg.Serve.Timeout = max(cfg.Serve.Timeout, *quiet)
	}
	if err := cfg.Validate(); err != nil {
		return &usageError{"serve: " + err.Error()}
	}
	set, err := detectors.NewSet(cfg.DetectorsConfig())
	if err != nil {
		return &inputError{err}
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(errOut, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
	}
	if cfg.Serve.QueryOnly {
		srv, err := server.StartQueryNode(ctx, &cfg.Config, logf, server.WithVersion(version))
		if err != nil {
			return err
		}
		logf("query node: Flight SQL %s, HTTP http://%s over the archive %s", orOff(srv.FlightAddr()), srv.HTTPAddr(), cfg.Serve.Archive)
		<-ctx.Done()
		logf("stopping")
		return srv.Shutdown()
	}
	srv, err := server.Start(ctx, &cfg.Config, set, logf, server.WithVersion(version))
	if err != nil {
		return err
	}
	logf("serving: NATS %s, Flight SQL %s, HTTP http://%s (data in %s)", srv.NATSURL(), orOff(srv.FlightAddr()), srv.HTTPAddr(), cfg.Serve.DataDir)
	<-ctx.Done()
	logf("stopping")
	return srv.Shutdown()
}

func override(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

func orOff(s string) string {
	if s == "" {
		return "off"
	}
	return s
}

// archiveTarget is server.ArchiveTarget, for analyze --archive.
func archiveTarget(cfg *Config, dataDir string) (string, func(context.Context, string, archive.Written) error, error) {
	return server.ArchiveTarget(&cfg.Config, dataDir)
}
