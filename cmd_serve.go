package main

import (
	"context"
	"io"

	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/server"
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
	var f server.Flags
	fs := cli.FlagSet("serve", serveHelp, errOut)
	fs.StringVar(&f.Config, "config", "", configHelp)
	fs.StringVar(&f.DataDir, "data-dir", "", "folder for the database, JetStream storage and reports (default "+defaultServe.DataDir+")")
	fs.StringVar(&f.HTTP, "http", "", "HTTP address for /healthz, /metrics and reports (default "+defaultServe.HTTP+")")
	fs.StringVar(&f.Flight, "flight", "", "Flight SQL address, or 'off' (default "+defaultServe.Flight+")")
	fs.StringVar(&f.NATSURL, "nats-url", "", "use this NATS cluster instead of the embedded server")
	fs.StringVar(&f.NATSListen, "nats-listen", "", "embedded NATS client address (default "+transport.DefaultNATS.Listen+")")
	fs.DurationVar(&f.Quiet, "quiet", 0, "analyze a run once it has received nothing this long (default 2s)")
	fs.StringVar(&f.Archive, "archive", "", "fleet archive, a folder or s3://bucket/prefix: write every analysed run there as Parquet (serve.archive)")
	fs.BoolVar(&f.QueryOnly, "query-only", false, "serve Flight SQL over the --archive of every ingestor; no NATS, ingestor or detectors")
	cli.ThreadsVar(fs, &f.Threads)
	fs.BoolVar(&f.Insecure, "insecure", false, "listen beyond loopback without authentication (serve.insecure): anyone who reaches the ports may publish and read")
	if err := cli.Parse(fs, args, out); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usage("serve: takes no arguments (see 'trainscope serve --help')")
	}
	return server.Run(ctx, f, errOut, server.WithVersion(version))
}

// defaultServe is the default serve section, for flags' help texts.
var defaultServe = config.Default().Serve
