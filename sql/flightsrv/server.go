package flightsrv

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	duckdb "github.com/duckdb/duckdb-go/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trainscope/trainscope/sql/duck"
)

// Server answers Flight SQL requests with read-only queries on a Store.
// Every query runs on its own duck.Reader, so queries run concurrently
// with each other and with the Store's writer.
type Server struct {
	flightsql.BaseServer
	st   *duck.Store
	opts Options
	logf func(string, ...any)
}

// Options tune a Server. The zero value serves anyone, without limits:
// what a test on loopback wants, never a server on a network.
type Options struct {
	// Logf hears about refused and failed queries; nil is silent.
	Logf func(string, ...any)
	// Timeout ends a query that runs longer, planning included (0: no
	// limit): DuckDB is interrupted, and the client gets DeadlineExceeded
	// with the limit named.
	Timeout time.Duration
	// MaxRows ends a result that grows past this many rows (0: no limit):
	// the rows sent so far, then ResourceExhausted naming the limit; the
	// query stops there.
	MaxRows int64
	// Token, when set, must come with every call as the gRPC metadata
	// "authorization: Bearer <token>" (what ADBC, JDBC and Grafana send).
	Token string
	// TLS, when set, serves TLS; with ClientCAs and
	// tls.RequireAndVerifyClientCert it also requires client certificates.
	TLS *tls.Config
}

// NewServer returns a Server over st.
func NewServer(st *duck.Store, opts Options) (*Server, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	// Load DuckDB's parser now, so that a broken build fails at start
	// rather than on the first query.
	if _, err := loadParser(); err != nil {
		return nil, err
	}
	s := &Server{st: st, opts: opts, logf: logf}
	s.Alloc = memory.DefaultAllocator
	if err := s.registerSqlInfo(context.Background()); err != nil {
		return nil, err
	}
	return s, nil
}

// GRPCOptions are the server options that enforce opts' token and TLS.
func (o Options) GRPCOptions() []grpc.ServerOption {
	var out []grpc.ServerOption
	if o.TLS != nil {
		out = append(out, grpc.Creds(credentials.NewTLS(o.TLS)))
	}
	if o.Token != "" {
		check := func(ctx context.Context) error { return checkToken(ctx, o.Token) }
		out = append(out,
			grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if err := check(ctx); err != nil {
					return nil, err
				}
				return h(ctx, req)
			}),
			grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
				if err := check(ss.Context()); err != nil {
					return err
				}
				return h(srv, ss)
			}))
	}
	return out
}

// checkToken accepts a call that carries "authorization: Bearer <token>".
func checkToken(ctx context.Context, token string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	got := md.Get("authorization")
	if len(got) == 0 {
		return status.Error(codes.Unauthenticated, "missing bearer token: this server requires one (authorization: Bearer <token>)")
	}
	want := "Bearer " + token
	if subtle.ConstantTimeCompare([]byte(got[0]), []byte(want)) != 1 {
		return status.Error(codes.Unauthenticated, "invalid bearer token")
	}
	return nil
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves
// Flight SQL over st until ctx is done or stop is called. It returns the
// address it listens on. stop waits up to five seconds for running
// queries, then cancels them; it returns the error that ended serving, if
// any.
func Serve(ctx context.Context, addr string, st *duck.Store, opts Options) (net.Addr, func() error, error) {
	srv, err := NewServer(st, opts)
	if err != nil {
		return nil, nil, err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("flight sql: listen on %s: %w", addr, err)
	}
	gs := grpc.NewServer(opts.GRPCOptions()...)
	flight.RegisterFlightServiceServer(gs, flightsql.NewFlightServer(srv))
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()

	var (
		once     sync.Once
		serveErr error
		stopped  = make(chan struct{})
	)
	stop := func() error {
		once.Do(func() {
			graceful := make(chan struct{})
			go func() { gs.GracefulStop(); close(graceful) }()
			select {
			case <-graceful:
			case <-time.After(5 * time.Second):
				gs.Stop() // closes the streams, which cancels their queries
				<-graceful
			}
			serveErr = <-served
			if errors.Is(serveErr, grpc.ErrServerStopped) {
				serveErr = nil
			}
			close(stopped)
		})
		return serveErr
	}
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-stopped:
		}
	}()
	return lis.Addr(), stop, nil
}

// GetFlightInfoStatement checks the query and hands back a ticket that
// carries it. The result's schema is not computed here (that would run the
// query twice); it comes first in the DoGet stream.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if len(cmd.GetTransactionId()) > 0 {
		return nil, status.Error(codes.InvalidArgument, "transactions are not supported: this server is read-only")
	}
	q := cmd.GetQuery()
	if err := s.validate(ctx, q); err != nil {
		return nil, err
	}
	tkt, err := flightsql.CreateStatementQueryTicket([]byte(q))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "ticket: %v", err)
	}
	return &flight.FlightInfo{
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}},
		FlightDescriptor: desc,
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// DoGetStatement runs the query in the ticket. Tickets come from clients,
// so the query is checked again.
func (s *Server) DoGetStatement(ctx context.Context, tkt flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.run(ctx, string(tkt.GetStatementHandle()))
}

// CreatePreparedStatement checks the query; the handle is the query text
// itself, so the server keeps no state per statement and nothing leaks
// when a client never closes one. Parameters are not supported.
func (s *Server) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	if len(req.GetTransactionId()) > 0 {
		return flightsql.ActionCreatePreparedStatementResult{}, status.Error(codes.InvalidArgument, "transactions are not supported: this server is read-only")
	}
	q := req.GetQuery()
	if err := s.validate(ctx, q); err != nil {
		return flightsql.ActionCreatePreparedStatementResult{}, err
	}
	isUpdate := false
	return flightsql.ActionCreatePreparedStatementResult{Handle: []byte(q), IsUpdate: &isUpdate}, nil
}

// ClosePreparedStatement has nothing to release (see CreatePreparedStatement).
func (s *Server) ClosePreparedStatement(context.Context, flightsql.ActionClosePreparedStatementRequest) error {
	return nil
}

// GetFlightInfoPreparedStatement returns the command itself as the ticket.
func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if err := s.validate(ctx, string(cmd.GetPreparedStatementHandle())); err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		FlightDescriptor: desc,
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// DoGetPreparedStatement runs the query the handle carries, checked again.
func (s *Server) DoGetPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.run(ctx, string(cmd.GetPreparedStatementHandle()))
}

// DoPutPreparedStatementQuery would bind parameters.
func (s *Server) DoPutPreparedStatementQuery(context.Context, flightsql.PreparedStatementQuery, flight.MessageReader, flight.MetadataWriter) ([]byte, error) {
	return nil, status.Error(codes.Unimplemented, "query parameters are not supported: write the values into the query")
}

// The write paths of Flight SQL all answer the same.
var errReadOnly = status.Error(codes.PermissionDenied, "this server is read-only: updates, ingestion and transactions are refused")

func (s *Server) DoPutCommandStatementUpdate(context.Context, flightsql.StatementUpdate) (int64, error) {
	return 0, errReadOnly
}

func (s *Server) DoPutPreparedStatementUpdate(context.Context, flightsql.PreparedStatementUpdate, flight.MessageReader) (int64, error) {
	return 0, errReadOnly
}

func (s *Server) DoPutCommandStatementIngest(context.Context, flightsql.StatementIngest, flight.MessageReader) (int64, error) {
	return 0, errReadOnly
}

func (s *Server) BeginTransaction(context.Context, flightsql.ActionBeginTransactionRequest) ([]byte, error) {
	return nil, errReadOnly
}

// validate checks q without running it: the read-only check, then DuckDB
// prepares it on a fresh connection, which reports syntax and binding
// errors (unknown table, wrong column) before the client asks for data.
// Preparing plans the query, which can cost as much as running it (DuckDB
// folds constant expressions then), so it runs within the query timeout.
func (s *Server) validate(ctx context.Context, q string) error {
	run, err := s.check(q)
	if err != nil {
		return err
	}
	r, err := s.st.NewReader(ctx)
	if err != nil {
		return status.Errorf(codes.Unavailable, "%v", err)
	}
	defer r.Close()
	vctx, cancel := s.limit(ctx)
	defer cancel()
	typ, err := r.StatementTypeContext(vctx, run)
	if err == nil {
		err = allowType(typ)
	}
	if err != nil {
		s.logf("flight sql: %q: %v", abbrev(q), err)
		return s.limitStatus(vctx, toStatus(err))
	}
	return nil
}

// check runs the first, parser-level check and returns the text to run
// (see runnable).
func (s *Server) check(q string) (string, error) {
	run, err := runnable(q, 0)
	if err != nil {
		s.logf("flight sql: refused %q: %v", abbrev(q), err)
		return "", toStatus(err)
	}
	return run, nil
}

// allowType is the second, independent check: DuckDB's own classification
// of the prepared statement. Preparing binds, which is harmless once the
// query passed the first check.
func allowType(typ duckdb.StmtType) error {
	if typ != duckdb.STATEMENT_TYPE_SELECT && typ != duckdb.STATEMENT_TYPE_EXPLAIN {
		return refuse("DuckDB classifies this statement as type %d, not a SELECT", typ)
	}
	return nil
}

// limit is ctx within the server's query timeout.
func (s *Server) limit(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.opts.Timeout > 0 {
		return context.WithTimeout(ctx, s.opts.Timeout)
	}
	return context.WithCancel(ctx)
}

// run executes a checked query on its own Reader and streams DuckDB's
// Arrow records unchanged, within the server's time and row limits.
// DuckDB computes the result as it is sent (a streaming result), so
// neither the time limit nor the row limit waits for the whole result to
// be built: the query stops when either is reached, or the client goes.
func (s *Server) run(ctx context.Context, q string) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	run, err := s.check(q)
	if err != nil {
		return nil, nil, err
	}
	r, err := s.st.NewReader(ctx)
	if err != nil {
		return nil, nil, status.Errorf(codes.Unavailable, "%v", err)
	}
	qctx, cancel := s.limit(ctx)
	rdr, err := r.Stream(qctx, run, allowType)
	if err != nil {
		cancel()
		r.Close()
		s.logf("flight sql: %q: %v", abbrev(q), err)
		return nil, nil, s.limitStatus(qctx, toStatus(err))
	}
	ch := make(chan flight.StreamChunk)
	go func() {
		defer cancel()
		s.stream(ctx, qctx, q, r, rdr, ch)
	}()
	return rdr.Schema(), ch, nil
}

// limitStatus names the server's timeout when the query ran into it.
func (s *Server) limitStatus(qctx context.Context, err error) error {
	if s.opts.Timeout > 0 && errors.Is(qctx.Err(), context.DeadlineExceeded) {
		return status.Errorf(codes.DeadlineExceeded, "the query ran longer than this server's limit of %s (serve.query.timeout): narrow it (a time range, a run, LIMIT) or raise the limit", s.opts.Timeout)
	}
	return err
}

// stream sends the records of rdr, then releases it and closes r before
// closing ch: the Flight handler drains ch until it is closed, so no
// connection outlives its request. ctx is the request's (sending stops
// when the client goes), qctx the query's (it also ends at the timeout).
func (s *Server) stream(ctx, qctx context.Context, q string, r *duck.Reader, rdr array.RecordReader, ch chan<- flight.StreamChunk) {
	defer close(ch)
	defer r.Close()
	defer rdr.Release()
	defer func() {
		if p := recover(); p != nil {
			send(ctx, ch, flight.StreamChunk{Err: status.Errorf(codes.Internal, "panic while reading: %v", p)})
		}
	}()
	var rows int64
	for rdr.Next() {
		rec := rdr.RecordBatch()
		if s.opts.MaxRows > 0 && rows+rec.NumRows() > s.opts.MaxRows {
			if keep := s.opts.MaxRows - rows; keep > 0 {
				part := rec.NewSlice(0, keep)
				if !send(ctx, ch, flight.StreamChunk{Data: part}) {
					part.Release()
					return
				}
			}
			s.logf("flight sql: %q: stopped at the row limit (%d)", abbrev(q), s.opts.MaxRows)
			send(ctx, ch, flight.StreamChunk{Err: status.Errorf(codes.ResourceExhausted,
				"the result has more than %d rows, this server's limit (serve.query.max_rows): aggregate, add a LIMIT, or raise the limit", s.opts.MaxRows)})
			return
		}
		rows += rec.NumRows()
		rec.Retain()
		if !send(ctx, ch, flight.StreamChunk{Data: rec}) {
			rec.Release()
			return
		}
	}
	if err := rdr.Err(); err != nil {
		send(ctx, ch, flight.StreamChunk{Err: s.limitStatus(qctx, toStatus(err))})
	}
}

func send(ctx context.Context, ch chan<- flight.StreamChunk, c flight.StreamChunk) bool {
	select {
	case ch <- c:
		return true
	case <-ctx.Done():
		return false
	}
}

// toStatus maps errors to gRPC codes the client turns back into messages:
// refusals (ours, or DuckDB's: a file outside the allowed folders) are
// PermissionDenied, DuckDB running out of memory ResourceExhausted,
// anything else DuckDB says about the query (syntax, unknown table)
// InvalidArgument.
func toStatus(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	var ref *RefusedError
	var de *duckdb.Error
	switch {
	case errors.As(err, &ref):
		return status.Error(codes.PermissionDenied, ref.Reason)
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.As(err, &de) && de.Type == duckdb.ErrorTypeOutOfMemory:
		// DuckDB's message goes on with SET commands to try, which a
		// client cannot run here
		msg, _, _ := strings.Cut(de.Msg, "\n")
		return status.Errorf(codes.ResourceExhausted, "%s: the query needs more memory than this server's limit (serve.query.memory_limit, or duckdb.memory_limit): aggregate, narrow it, or raise the limit", msg)
	case errors.As(err, &de) && de.Type == duckdb.ErrorTypePermission:
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return status.Error(codes.InvalidArgument, err.Error())
}

func abbrev(q string) string {
	if len(q) > 200 {
		return q[:200] + "..."
	}
	return q
}
