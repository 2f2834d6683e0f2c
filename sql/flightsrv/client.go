package flightsrv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// ErrNoServer is wrapped by Query's error when nothing answers at the
// address (no process listening, or not a gRPC server).
var ErrNoServer = errors.New("no trainscope server")

// Result is a query's whole answer. Release it when done.
type Result struct {
	Schema  *arrow.Schema
	Batches []arrow.RecordBatch
}

// NumRows counts the rows of every batch.
func (r *Result) NumRows() int64 {
	var n int64
	for _, b := range r.Batches {
		n += b.NumRows()
	}
	return n
}

// Release frees the batches.
func (r *Result) Release() {
	for _, b := range r.Batches {
		b.Release()
	}
	r.Batches = nil
}

// maxMessage bounds one record batch on the wire; DuckDB sends batches of
// 2048 rows, which a table of long strings can push past gRPC's 4 MiB
// default.
const maxMessage = 256 << 20

// Query runs query on the Flight SQL server at addr (host:port, or
// grpc://host:port) without credentials and reads the whole result; see
// Dialer.Query.
func Query(ctx context.Context, addr, query string) (*Result, error) {
	return Dialer{}.Query(ctx, addr, query)
}

// Dialer holds what a client presents to a server: a bearer token, and
// TLS files (a CA to verify the server, a certificate and key for mTLS).
// TLS is on when any file is given or the address is grpc+tls://.
type Dialer struct {
	Token                     string
	CAFile, CertFile, KeyFile string
}

// Query runs query and reads the whole result. A refusal comes back as a
// *RefusedError ("server refused: ..."), other server errors with the
// server's message, and a clear error when nothing listens at addr.
func (d Dialer) Query(ctx context.Context, addr, query string) (*Result, error) {
	res := &Result{}
	err := d.Stream(ctx, addr, query, func(schema *arrow.Schema, rec arrow.RecordBatch) error {
		if rec == nil {
			res.Schema = schema
			return nil
		}
		rec.Retain()
		res.Batches = append(res.Batches, rec)
		return nil
	})
	if err != nil {
		res.Release()
		return nil, err
	}
	return res, nil
}

// Stream runs query and hands fn the result as it arrives: first the
// schema with a nil batch, then each batch (valid during the call only;
// Retain it to keep it). An error from fn ends the query and is returned.
func (d Dialer) Stream(ctx context.Context, addr, query string, fn func(*arrow.Schema, arrow.RecordBatch) error) error {
	target, useTLS, err := dialTarget(addr)
	if err != nil {
		return err
	}
	opts := []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage))}
	if useTLS || d.CAFile != "" || d.CertFile != "" {
		cfg, err := d.tlsConfig()
		if err != nil {
			return err
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	cl, err := flightsql.NewClient(target, nil, nil, opts...)
	if err != nil {
		return fmt.Errorf("flight sql client for %s: %w", addr, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if d.Token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+d.Token)
	}

	info, err := cl.Execute(ctx, query)
	if err != nil {
		return remoteError(addr, err)
	}
	var schema *arrow.Schema
	if len(info.Schema) > 0 {
		if schema, err = flight.DeserializeSchema(info.Schema, memory.DefaultAllocator); err != nil {
			return fmt.Errorf("flight sql %s: result schema: %w", addr, err)
		}
	}
	// Our server answers with one endpoint and no location (read it from
	// this connection); more are read in order, as the protocol allows.
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.GetTicket())
		if err != nil {
			return remoteError(addr, err)
		}
		if schema == nil {
			schema = rdr.Schema()
			if err := fn(schema, nil); err != nil {
				rdr.Release()
				return err
			}
		}
		for rdr.Next() {
			if err := fn(schema, rdr.RecordBatch()); err != nil {
				rdr.Release()
				return err
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return remoteError(addr, err)
		}
	}
	if schema == nil {
		return fn(arrow.NewSchema(nil, nil), nil)
	}
	return nil
}

func (d Dialer) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if d.CAFile != "" {
		pem, err := os.ReadFile(d.CAFile)
		if err != nil {
			return nil, fmt.Errorf("TLS CA: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS CA %s: no PEM certificate in it", d.CAFile)
		}
	}
	if d.CertFile != "" || d.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(d.CertFile, d.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// dialTarget accepts host:port and the grpc://, grpc+tcp:// and
// grpc+tls:// URIs ADBC users are used to; it says whether TLS is asked.
func dialTarget(addr string) (string, bool, error) {
	switch {
	case strings.HasPrefix(addr, "grpc+tls://"):
		return strings.TrimPrefix(addr, "grpc+tls://"), true, nil
	case strings.HasPrefix(addr, "grpc+tcp://"):
		return strings.TrimPrefix(addr, "grpc+tcp://"), false, nil
	case strings.HasPrefix(addr, "grpc://"):
		return strings.TrimPrefix(addr, "grpc://"), false, nil
	case addr == "":
		return "", false, errors.New("no server address given (host:port)")
	}
	return addr, false, nil
}

// remoteError turns a gRPC status back into the message a user can act on.
func remoteError(addr string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("flight sql %s: %w", addr, err)
	}
	switch st.Code() {
	case codes.PermissionDenied:
		return &RefusedError{Reason: st.Message(), Server: addr}
	case codes.InvalidArgument:
		return fmt.Errorf("query failed: %s", st.Message())
	case codes.Unavailable:
		msg := st.Message()
		switch {
		case strings.Contains(msg, "server preface"):
			return fmt.Errorf("flight sql %s: the server does not speak plain gRPC; if it serves TLS, use grpc+tls://%s (with --ca for a private CA)", addr, strings.TrimPrefix(addr, "grpc://"))
		case strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:") || strings.Contains(msg, "certificate"):
			return fmt.Errorf("flight sql %s: TLS: %s", addr, msg)
		}
		return fmt.Errorf("%w at %s: %s (start one with 'trainscope serve')", ErrNoServer, addr, unavailableReason(msg))
	case codes.Canceled, codes.DeadlineExceeded, codes.ResourceExhausted:
		return fmt.Errorf("query to %s: %s", addr, st.Message())
	case codes.Unauthenticated:
		return fmt.Errorf("%s: %s (give the server's token with --token or TRAINSCOPE_TOKEN)", addr, st.Message())
	}
	return fmt.Errorf("flight sql %s: %s: %s", addr, st.Code(), st.Message())
}

// unavailableReason shortens gRPC's "connection error: desc = \"transport:
// Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused\""
// to "connection refused".
func unavailableReason(msg string) string {
	msg = strings.TrimSuffix(msg, `"`)
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.Contains(msg, "dial") {
		return msg[i+2:]
	}
	return msg
}
