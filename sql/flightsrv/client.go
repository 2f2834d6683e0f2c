package flightsrv

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
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
// grpc://host:port) and reads the whole result. A refusal comes back as a
// *RefusedError ("server refused: ..."), other server errors with the
// server's message, and a clear error when nothing listens at addr.
func Query(ctx context.Context, addr, query string) (*Result, error) {
	target, err := dialTarget(addr)
	if err != nil {
		return nil, err
	}
	cl, err := flightsql.NewClient(target, nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage)))
	if err != nil {
		return nil, fmt.Errorf("flight sql client for %s: %w", addr, err)
	}
	defer cl.Close()

	info, err := cl.Execute(ctx, query)
	if err != nil {
		return nil, remoteError(addr, err)
	}
	res := &Result{}
	if len(info.Schema) > 0 {
		if res.Schema, err = flight.DeserializeSchema(info.Schema, memory.DefaultAllocator); err != nil {
			return nil, fmt.Errorf("flight sql %s: result schema: %w", addr, err)
		}
	}
	// Our server answers with one endpoint and no location (read it from
	// this connection); more are read in order, as the protocol allows.
	for _, ep := range info.Endpoint {
		if err := readEndpoint(ctx, cl, ep, res); err != nil {
			res.Release()
			return nil, remoteError(addr, err)
		}
	}
	if res.Schema == nil {
		res.Schema = arrow.NewSchema(nil, nil)
	}
	return res, nil
}

func readEndpoint(ctx context.Context, cl *flightsql.Client, ep *flight.FlightEndpoint, res *Result) error {
	rdr, err := cl.DoGet(ctx, ep.GetTicket())
	if err != nil {
		return err
	}
	defer rdr.Release()
	if res.Schema == nil {
		res.Schema = rdr.Schema()
	}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		res.Batches = append(res.Batches, rec)
	}
	return rdr.Err()
}

// dialTarget accepts host:port and the grpc:// and grpc+tcp:// URIs ADBC
// users are used to; TLS is not served.
func dialTarget(addr string) (string, error) {
	switch {
	case strings.HasPrefix(addr, "grpc+tls://"):
		return "", fmt.Errorf("%s: TLS is not supported; the trainscope endpoint is plain gRPC (grpc://host:port)", addr)
	case strings.HasPrefix(addr, "grpc+tcp://"):
		return strings.TrimPrefix(addr, "grpc+tcp://"), nil
	case strings.HasPrefix(addr, "grpc://"):
		return strings.TrimPrefix(addr, "grpc://"), nil
	case addr == "":
		return "", errors.New("no server address given (host:port)")
	}
	return addr, nil
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
		return fmt.Errorf("%w at %s: %s (start one with 'trainscope serve')", ErrNoServer, addr, unavailableReason(st.Message()))
	case codes.Canceled, codes.DeadlineExceeded:
		return fmt.Errorf("query to %s: %s", addr, st.Message())
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
