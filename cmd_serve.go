package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/httpapi"
	"github.com/trainscope/trainscope/detectors/live"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
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
	set, err := detectors.NewSet(cfg.detectorsConfig())
	if err != nil {
		return &inputError{err}
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(errOut, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
	}
	if cfg.Serve.QueryOnly {
		srv, err := startQueryNode(ctx, cfg, logf)
		if err != nil {
			return err
		}
		logf("query node: Flight SQL %s, HTTP http://%s over the archive %s", orOff(srv.flightAddr), srv.httpAddr, cfg.Serve.Archive)
		<-ctx.Done()
		logf("stopping")
		return srv.stop()
	}
	srv, err := startServer(ctx, cfg, set, logf)
	if err != nil {
		return err
	}
	logf("serving: NATS %s, Flight SQL %s, HTTP http://%s (data in %s)", srv.natsURL, orOff(srv.flightAddr), srv.httpAddr, cfg.Serve.DataDir)
	<-ctx.Done()
	logf("stopping")
	return srv.stop()
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

// server is a running 'trainscope serve': the wiring of the embedded or
// external NATS, the ingestor (ingest.Consumer), the detector scheduler
// (detectors/live), Flight SQL (sql/flightsrv) and the HTTP API
// (detectors/httpapi).
type server struct {
	natsURL, httpAddr, flightAddr string

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	embedded *transport.Embedded
	nc       *nats.Conn
	st       *duck.Store
	mu       sync.Mutex
	stats    *ingest.IngestStats
	monitor  *ingest.Monitor
	sched    *live.Scheduler
	co       *ingest.Coordinator // nil unless the stream is partitioned
	http     *http.Server
	stopOnce sync.Once
	stopErr  error
	flight   func() error
}

// serverOption changes how a server started by startServer keeps time;
// tests use it to decide when the scheduler looks for due runs.
type serverOption func(*serverClock)

type serverClock struct {
	now   func() time.Time
	ticks <-chan time.Time // nil: a ticker at the scheduler's own period
}

// withClock makes the scheduler read time from now and look for due runs
// only when ticks delivers.
func withClock(now func() time.Time, ticks <-chan time.Time) serverOption {
	return func(c *serverClock) { c.now, c.ticks = now, ticks }
}

// startupWait bounds how long serve waits at its start for JetStream to
// set up its stream, consumers and buckets (transport.RetryJS): a cluster
// that lost a node or is electing its leaders answers late.
const startupWait = 2 * time.Minute

func startServer(parent context.Context, cfg *Config, set *detectors.Set, logf func(string, ...any), opts ...serverOption) (_ *server, err error) {
	clock := serverClock{now: time.Now}
	for _, o := range opts {
		o(&clock)
	}
	ctx, cancel := context.WithCancel(parent)
	s := &server{cancel: cancel, stats: &ingest.IngestStats{}}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	sec, err := listenerSecurity(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Serve.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	// serve's replies (its pull consumers' deliveries: every batch of
	// every run; JetStream and key-value answers) come on an inbox prefix
	// of its own, which the publishers' _INBOX.> does not cover
	inbox := nats.CustomInboxPrefix(transport.ServeInboxPrefix)
	if cfg.NATS.URL == "" {
		s.embedded, err = transport.StartEmbeddedAuth(filepath.Join(cfg.Serve.DataDir, "jetstream"), cfg.NATS.Listen, cfg.NATS.Server)
		if err != nil {
			return nil, err
		}
		s.natsURL = s.embedded.URL()
		s.nc, err = transport.ConnectEmbedded(s.embedded, "trainscope-serve", inbox)
	} else {
		s.natsURL = cfg.NATS.URL
		s.nc, err = transport.Connect(cfg.NATS, "trainscope-serve", inbox)
	}
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(s.nc)
	if err != nil {
		return nil, err
	}
	var jstream jetstream.Stream
	err = transport.RetryJS(ctx, startupWait, logf, "set up the stream", func() (err error) {
		jstream, err = transport.EnsureStream(ctx, js, cfg.Stream)
		return err
	})
	if err != nil {
		return nil, err
	}
	if info := jstream.CachedInfo(); info != nil && info.Config.Discard == jetstream.DiscardOld {
		logf("stream %s drops its oldest batches when full (stream.discard: old), read or not: batches the ingestor has not reached are lost; "+
			"it counts them (trainscope_ingest_missing_batches_total) and the reports of their runs say so", cfg.Stream.Name)
	}
	// one ingestor consumes everything, or (stream.partitions > 1) this
	// one shares the partitions with the others and owns the runs it
	// claims (ingest.Coordinator)
	var cons jetstream.Consumer
	var co *ingest.Coordinator
	durable := cfg.Ingest.Durable
	pendingWhy := func(context.Context, string) (string, error) { return "", nil }
	if cfg.Stream.Partitioned() {
		member := cfg.Ingest.Member
		if member == "" {
			host, _ := os.Hostname()
			member = transport.MemberToken(host)
		}
		co = &ingest.Coordinator{JS: js, Stream: jstream, SCfg: cfg.Stream, Cfg: cfg.Ingest, Member: member, Logf: logf, StartupWait: startupWait}
		s.co = co
		durable += "-to-" + member
		pendingWhy = co.Pending
	} else {
		if err = transport.RetryJS(ctx, startupWait, logf, "set up the consumer", func() (err error) {
			cons, err = ingest.NewConsumer(ctx, jstream, cfg.Ingest)
			return err
		}); err != nil {
			return nil, err
		}
		pendingWhy = ingest.Backlog{Stream: jstream, Cons: cons, Cluster: cfg.Stream.Cluster}.Pending
	}
	s.monitor = ingest.NewMonitor(cons, s.stats, durable,
		func() (bool, string) { return s.nc.IsConnected(), s.nc.Status().String() }, nil)
	archiveDir, upload, err := archiveTarget(cfg, cfg.Serve.DataDir)
	if err != nil {
		return nil, err
	}
	memLimit := cmp.Or(cfg.DuckDB.MemoryLimit, cfg.Serve.Query.MemoryLimit, defaultMemoryLimit())
	if s.st, err = duck.Open(ctx, filepath.Join(cfg.Serve.DataDir, "trainscope.duckdb"),
		duck.Options{Threads: cfg.duckThreads(), MemoryLimit: memLimit, CheckpointWAL: cfg.Serve.CheckpointWAL, Staged: cfg.Serve.Staged}); err != nil {
		return nil, err
	}
	// each pass runs its detectors side by side, one connection a core
	set.Workers = cfg.cores()
	s.sched = live.New(s.st, &s.mu, set, live.Config{DataDir: cfg.Serve.DataDir, Quiet: cfg.Serve.Quiet,
		Timeout: cfg.Serve.Timeout, Threads: cfg.duckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit,
		ArchiveDir: archiveDir, Upload: upload},
		live.Options{Logf: logf, Now: clock.now,
			PendingWhy: pendingWhy})
	if err := s.sched.Recover(ctx); err != nil {
		return nil, err
	}
	newConsumer := func() *ingest.Consumer {
		return &ingest.Consumer{St: s.st, Mu: &s.mu, Cfg: cfg.Ingest, Stats: s.stats, Stream: jstream,
			OnCommit: s.sched.Touched, Latency: s.monitor.ObserveLatency, Logf: logf, Workers: cfg.cores()}
	}
	s.wg.Add(2)
	if co != nil {
		co.New = newConsumer
		if err := co.Start(ctx); err != nil {
			s.wg.Add(-2)
			return nil, err
		}
		s.monitor.UseAll(co.Consumers)
		go func() { defer s.wg.Done(); co.Run(ctx, nil) }()
		logf("ingestor %s of a stream in %d partitions", co.Member, cfg.Stream.Partitions)
	} else {
		consumer := newConsumer()
		consumer.Cons = cons
		consumer.Recreate = func(ctx context.Context) (jetstream.Consumer, error) {
			return ingest.NewConsumer(ctx, jstream, cfg.Ingest)
		}
		go func() { defer s.wg.Done(); consumer.Run(ctx) }()
	}
	ticks := clock.ticks
	if ticks == nil {
		t := time.NewTicker(s.sched.TickEvery())
		go func() { <-ctx.Done(); t.Stop() }()
		ticks = t.C
	}
	go func() { defer s.wg.Done(); s.sched.Run(ctx, ticks) }()

	if err := s.listen(ctx, cfg, sec, logf, func(started time.Time) *httpapi.API {
		return &httpapi.API{Version: version, FlightAddr: s.flightAddr, Reports: s.sched, Health: s.monitor.Health,
			Info: func() map[string]any {
				return map[string]any{"nats": s.natsURL, "flight_sql": s.flightAddr,
					"uptime_s": int64(time.Since(started).Seconds()), "batches": s.stats.Messages.Load()}
			},
			Collectors: append(s.monitor.Collectors(), s.sched.Collectors()...)}
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// listen starts Flight SQL over s.st (unless serve.flight is off) and the
// HTTP API that api makes (told when the server started), both behind the
// server's token and TLS.
func (s *server) listen(ctx context.Context, cfg *Config, sec *serveSecurity, logf func(string, ...any), api func(started time.Time) *httpapi.API) error {
	if cfg.Serve.Flight != "" {
		addr, stop, err := startFlight(ctx, cfg.Serve, sec, s.st, logf)
		if err != nil {
			return fmt.Errorf("flight sql on %s: %w", cfg.Serve.Flight, err)
		}
		s.flightAddr, s.flight = addr, stop
	}
	ln, err := net.Listen("tcp", cfg.Serve.HTTP)
	if err != nil {
		return fmt.Errorf("http on %s: %w (set serve.http or --http)", cfg.Serve.HTTP, err)
	}
	s.httpAddr = ln.Addr().String()
	routes, err := api(time.Now()).Handler()
	if err != nil {
		ln.Close()
		return err
	}
	s.http = &http.Server{Handler: httpapi.RequireToken(sec.token, routes), ReadHeaderTimeout: 10 * time.Second, TLSConfig: sec.tls}
	if sec.tls != nil {
		go s.http.ServeTLS(ln, "", "")
	} else {
		go s.http.Serve(ln)
	}
	return nil
}

// stop shuts down in the order that loses nothing: stop taking requests,
// stop the consumer (an uncommitted fetch is redelivered later), close the
// database (checkpoint), then NATS.
func (s *server) stop() error {
	s.stopOnce.Do(func() {
		var errs []error
		if s.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, s.http.Shutdown(ctx))
			cancel()
		}
		if s.flight != nil {
			errs = append(errs, s.flight())
		}
		s.cancel()
		s.wg.Wait()
		if s.st != nil {
			errs = append(errs, s.st.Close())
		}
		if s.nc != nil {
			s.nc.Close()
		}
		if s.embedded != nil {
			s.embedded.Stop()
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}
