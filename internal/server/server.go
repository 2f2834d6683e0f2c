package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream/transport"
)

// Server is a running 'trainscope serve': the wiring of the embedded or
// external NATS, the ingestor (ingest.Consumer), the detector scheduler
// (detectors/live), Flight SQL (sql/flightsrv) and the HTTP API
// (detectors/httpapi); or, started by StartQueryNode, Flight SQL and HTTP
// over the fleet archive.
type Server struct {
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

// Option changes how Start or StartQueryNode sets a server up.
type Option func(*options)

type options struct {
	version string
	now     func() time.Time
	ticks   <-chan time.Time // nil: a ticker at the scheduler's own period
}

func newOptions(opts []Option) options {
	o := options{version: "dev", now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithVersion is the version the HTTP API reports (/healthz); "dev"
// without it.
func WithVersion(v string) Option {
	return func(o *options) { o.version = v }
}

// WithClock makes the scheduler read time from now and look for due runs
// only when ticks delivers; tests use it to decide when a run is quiet.
func WithClock(now func() time.Time, ticks <-chan time.Time) Option {
	return func(o *options) { o.now, o.ticks = now, ticks }
}

// startupWait bounds how long serve waits at its start for JetStream to
// set up its stream, consumers and buckets (transport.RetryJS): a cluster
// that lost a node or is electing its leaders answers late.
const startupWait = 2 * time.Minute

// Start starts 'trainscope serve' as cfg says: NATS (embedded, or
// cfg.NATS.URL), the stream and the ingestor's consumers, the store under
// cfg.Serve.DataDir, the scheduler running set's detectors over every
// quiet run, Flight SQL and HTTP; logf says what it does. It returns once
// every listener is up; the server runs until ctx ends or Shutdown. A
// config it refuses (a listener open to anyone, an unreadable token file)
// is a *config.Error.
func Start(parent context.Context, cfg *config.Config, set *detectors.Set, logf func(string, ...any), opts ...Option) (_ *Server, err error) {
	o := newOptions(opts)
	ctx, cancel := context.WithCancel(parent)
	s := &Server{cancel: cancel, stats: &ingest.IngestStats{}}
	defer func() {
		if err != nil {
			s.Shutdown()
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
	archiveDir, upload, err := cfg.ArchiveTarget(cfg.Serve.DataDir)
	if err != nil {
		return nil, err
	}
	memLimit := cmp.Or(cfg.DuckDB.MemoryLimit, cfg.Serve.Query.MemoryLimit, defaultMemoryLimit())
	if s.st, err = duck.Open(ctx, filepath.Join(cfg.Serve.DataDir, "trainscope.duckdb"),
		duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: memLimit, CheckpointWAL: cfg.Serve.CheckpointWAL, Staged: cfg.Serve.Staged}); err != nil {
		return nil, err
	}
	// each pass runs its detectors side by side, one connection a core
	set.Workers = cfg.Cores()
	s.sched = live.New(s.st, &s.mu, set, live.Config{DataDir: cfg.Serve.DataDir, Quiet: cfg.Serve.Quiet,
		Timeout: cfg.Serve.Timeout, Threads: cfg.DuckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit,
		ArchiveDir: archiveDir, Upload: upload},
		live.Options{Logf: logf, Now: o.now,
			PendingWhy: pendingWhy})
	if err := s.sched.Recover(ctx); err != nil {
		return nil, err
	}
	newConsumer := func() *ingest.Consumer {
		return &ingest.Consumer{St: s.st, Mu: &s.mu, Cfg: cfg.Ingest, Stats: s.stats, Stream: jstream,
			OnCommit: s.sched.Touched, Latency: s.monitor.ObserveLatency, Logf: logf, Workers: cfg.Cores()}
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
	ticks := o.ticks
	if ticks == nil {
		t := time.NewTicker(s.sched.TickEvery())
		go func() { <-ctx.Done(); t.Stop() }()
		ticks = t.C
	}
	auto, err := s.autoTrigger(cfg, set, o.now, logf)
	if err != nil {
		s.wg.Done()
		return nil, err
	}
	go func() { defer s.wg.Done(); s.runScheduler(ctx, ticks, auto) }()

	if err := s.listen(ctx, cfg, sec, logf, func(started time.Time) *httpapi.API {
		return &httpapi.API{Version: o.version, FlightAddr: s.flightAddr, Reports: s.sched, Health: s.monitor.Health,
			Info: func() map[string]any {
				return map[string]any{"nats": s.natsURL, "flight_sql": s.flightAddr,
					"uptime_s": int64(time.Since(started).Seconds()), "batches": s.stats.Messages.Load()}
			},
			Collectors: append(s.monitor.Collectors(), s.sched.Collectors()...), Routes: s.triggerRoutes()}
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// listen starts Flight SQL over s.st (unless serve.flight is off) and the
// HTTP API that api makes (told when the server started), both behind the
// server's token and TLS.
func (s *Server) listen(ctx context.Context, cfg *config.Config, sec *serveSecurity, logf func(string, ...any), api func(started time.Time) *httpapi.API) error {
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
	routes = s.withTrigger(routes, cfg, logf)
	s.http = &http.Server{Handler: httpapi.RequireToken(sec.token, routes), ReadHeaderTimeout: 10 * time.Second, TLSConfig: sec.tls}
	if sec.tls != nil {
		go s.http.ServeTLS(ln, "", "")
	} else {
		go s.http.Serve(ln)
	}
	return nil
}

// Shutdown stops the server in the order that loses nothing: stop taking
// requests, stop the consumer (an uncommitted fetch is redelivered
// later), close the database (checkpoint), then NATS. Calls after the
// first return its error.
func (s *Server) Shutdown() error {
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

// NATSURL is the NATS the server consumes from: the embedded server's
// client URL, or nats.url.
func (s *Server) NATSURL() string { return s.natsURL }

// HTTPAddr is the HTTP API's address (host:port, the port chosen when
// serve.http asked for 0).
func (s *Server) HTTPAddr() string { return s.httpAddr }

// FlightAddr is Flight SQL's address; "" when serve.flight is off.
func (s *Server) FlightAddr() string { return s.flightAddr }

// Store is the server's database.
func (s *Server) Store() *duck.Store { return s.st }

// StoreLock is the lock the store's writers (the ingestor, the
// scheduler) hold: hold it too for a read that must not see half of a
// commit.
func (s *Server) StoreLock() *sync.Mutex { return &s.mu }

// Scheduler is the detector scheduler (nil on a query node).
func (s *Server) Scheduler() *live.Scheduler { return s.sched }

// Stats are the ingestor's counters (nil on a query node).
func (s *Server) Stats() *ingest.IngestStats { return s.stats }

// Monitor watches the ingestor's consumers (nil on a query node).
func (s *Server) Monitor() *ingest.Monitor { return s.monitor }

// Coordinator shares a partitioned stream's partitions with the other
// ingestors; nil unless stream.partitions > 1.
func (s *Server) Coordinator() *ingest.Coordinator { return s.co }

// Embedded is the embedded NATS server; nil with nats.url.
func (s *Server) Embedded() *transport.Embedded { return s.embedded }

// NATS is the server's own connection to NATS (nil on a query node).
func (s *Server) NATS() *nats.Conn { return s.nc }
