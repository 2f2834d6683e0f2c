package plugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// maxMessage bounds one record batch on the wire (DuckDB sends 2048 rows
// a batch; long strings can pass gRPC's 4 MiB default).
const maxMessage = 256 << 20

// Client is a Flight SQL connection to one trainscope server. It is safe
// for concurrent use; gRPC connects lazily and reconnects on its own.
type Client struct {
	cl    *flightsql.Client
	token string
	addr  string
}

// Result is a query's records, at most the row limit of them.
type Result struct {
	Schema    *arrow.Schema
	Records   []arrow.RecordBatch
	Truncated bool // the server had more rows than the limit
}

// Release frees the records.
func (r *Result) Release() {
	for _, rec := range r.Records {
		rec.Release()
	}
	r.Records = nil
}

// NewClient dials nothing yet; the first call connects.
func NewClient(s Settings) (*Client, error) {
	creds := insecure.NewCredentials()
	if s.TLS {
		cfg := &tls.Config{ServerName: s.TLSServerName, InsecureSkipVerify: s.TLSSkipVerify, MinVersion: tls.VersionTLS12}
		if s.TLSCACert != "" {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM([]byte(s.TLSCACert)) {
				return nil, errors.New("secureJsonData.tlsCACert: no PEM certificate in it")
			}
			cfg.RootCAs = pool
		}
		creds = credentials.NewTLS(cfg)
	}
	cl, err := flightsql.NewClient(s.Address, nil, nil,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage)))
	if err != nil {
		return nil, fmt.Errorf("flight sql client for %s: %w", s.Address, err)
	}
	return &Client{cl: cl, token: s.Token, addr: s.Address}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.cl.Close() }

func (c *Client) ctx(ctx context.Context) context.Context {
	if c.token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token)
}

// Query runs sql and reads at most limit rows (0: no limit). When the
// server has more, it stops reading, cancels the stream and marks the
// result Truncated.
func (c *Client) Query(ctx context.Context, sql string, limit int64) (*Result, error) {
	ctx, cancel := context.WithCancel(c.ctx(ctx))
	defer cancel() // ends the stream if we stop early
	info, err := c.cl.Execute(ctx, sql)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	if len(info.Schema) > 0 {
		if res.Schema, err = flight.DeserializeSchema(info.Schema, memory.DefaultAllocator); err != nil {
			return nil, fmt.Errorf("result schema: %w", err)
		}
	}
	var rows int64
	for _, ep := range info.Endpoint {
		done, err := c.readEndpoint(ctx, ep, res, &rows, limit)
		if err != nil {
			res.Release()
			return nil, err
		}
		if done {
			break
		}
	}
	if res.Schema == nil {
		res.Schema = arrow.NewSchema(nil, nil)
	}
	return res, nil
}

func (c *Client) readEndpoint(ctx context.Context, ep *flight.FlightEndpoint, res *Result, rows *int64, limit int64) (bool, error) {
	rdr, err := c.cl.DoGet(ctx, ep.GetTicket())
	if err != nil {
		return false, err
	}
	defer rdr.Release()
	if res.Schema == nil {
		res.Schema = rdr.Schema()
	}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		n := rec.NumRows()
		if limit > 0 && *rows+n > limit {
			keep := limit - *rows
			res.Records = append(res.Records, rec.NewSlice(0, keep))
			*rows += keep
			res.Truncated = true
			return true, nil
		}
		rec.Retain()
		res.Records = append(res.Records, rec)
		*rows += n
	}
	return false, rdr.Err()
}
