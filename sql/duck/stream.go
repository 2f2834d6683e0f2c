package duck

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	bindings "github.com/duckdb/duckdb-go-bindings"
	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/arrowmapping"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// Why this file talks to DuckDB's C API beside the driver: duckdb-go
// (v2.10505) runs every query to a materialized result, the whole result
// in memory before the first row comes back (and outside DuckDB's
// memory_limit: 1e8 BIGINTs took 850 MB under a 500 MB limit), and it
// prepares without ever interrupting, so a query whose cost is in planning
// (DuckDB folds constant expressions then) runs past any deadline. Stream
// and StatementTypeContext use the connection's C handle for a streaming
// result and for duckdb_interrupt.

// rawConn is the C handle of a duckdb-go connection. The driver keeps it
// in an unexported field; the field's name and type are checked, so a
// driver that moves it fails here (and in this package's tests), not in
// DuckDB.
func rawConn(c driver.Conn) (mapping.Connection, error) {
	dc, ok := c.(*duckdb.Conn)
	if !ok || dc == nil {
		return mapping.Connection{}, fmt.Errorf("not a DuckDB connection: %T", c)
	}
	f := reflect.ValueOf(dc).Elem().FieldByName("conn")
	if !f.IsValid() || f.Type() != reflect.TypeFor[mapping.Connection]() {
		return mapping.Connection{}, errors.New("this duckdb-go keeps its connection handle elsewhere: sql/duck's rawConn needs updating")
	}
	raw := *(*mapping.Connection)(unsafe.Pointer(f.UnsafeAddr()))
	if raw.Ptr == nil {
		return mapping.Connection{}, errors.New("DuckDB connection without a handle")
	}
	return raw, nil
}

// interruptEvery is how often a statement whose context has ended is
// interrupted again: DuckDB clears the flag when a query moves on to its
// next phase, so one interrupt can be lost.
const interruptEvery = 50 * time.Millisecond

// interruptWhenDone interrupts whatever the connection runs once ctx is
// done, again and again until stop is called. stop waits for the
// interrupting goroutine to end, so no interrupt reaches the connection's
// next statement, nor a connection already closed.
func (r *Reader) interruptWhenDone(ctx context.Context) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		t := time.NewTicker(interruptEvery)
		defer t.Stop()
		for {
			mapping.Interrupt(r.raw)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		<-exited
	})
}

// prepare prepares query, which must be one statement. The caller
// destroys the statement.
func (r *Reader) prepare(query string) (mapping.PreparedStatement, error) {
	var stmt mapping.PreparedStatement
	var ext mapping.ExtractedStatements
	n := mapping.ExtractStatements(r.raw, query, &ext)
	defer mapping.DestroyExtracted(&ext)
	switch {
	case n == 0:
		if msg := mapping.ExtractStatementsError(ext); msg != "" {
			return stmt, duckError(msg, errorTypeOf(msg))
		}
		return stmt, errors.New("empty query")
	case n > 1:
		return stmt, fmt.Errorf("%d statements: send one at a time", n)
	}
	if mapping.PrepareExtractedStatement(r.raw, ext, 0, &stmt) == mapping.StateError {
		msg := mapping.PrepareError(stmt)
		mapping.DestroyPrepare(&stmt)
		return stmt, duckError(msg, errorTypeOf(msg))
	}
	return stmt, nil
}

// StatementTypeContext is StatementType within ctx: when ctx ends while
// DuckDB plans the query, DuckDB is interrupted and the error wraps
// ctx.Err(). DuckDB notices an interrupt between the steps of planning,
// not within one: a single expression that takes long to fold still runs
// to its end.
func (r *Reader) StatementTypeContext(ctx context.Context, query string) (duckdb.StmtType, error) {
	if r.conn == nil {
		return duckdb.STATEMENT_TYPE_INVALID, errors.New("statement type: reader is closed")
	}
	if err := ctx.Err(); err != nil {
		return duckdb.STATEMENT_TYPE_INVALID, err
	}
	stop := r.interruptWhenDone(ctx)
	defer stop()
	stmt, err := r.prepare(query)
	if err != nil {
		return duckdb.STATEMENT_TYPE_INVALID, withContext(ctx, err)
	}
	defer mapping.DestroyPrepare(&stmt)
	return duckdb.StmtType(mapping.PreparedStatementType(stmt)), nil
}

// Stream runs query, one statement, and returns its result as Arrow
// records that DuckDB computes as they are read: a streaming result, of
// which DuckDB runs ahead of the reader by a small buffer only
// (streaming_buffer_size), so neither a long result nor a reader that stops
// early costs the memory of the whole result. Releasing the reader before
// the end stops the query.
//
// ctx bounds the query from planning to the last record: when it ends,
// DuckDB is interrupted (see StatementTypeContext for what it cannot
// interrupt), and the error, from Stream or from the reader's Err, wraps
// ctx.Err(). allow, unless nil, sees DuckDB's type of the prepared
// statement before it runs; an error from it is Stream's error and the
// statement does not run. Release the reader before the Reader's next
// query and before Close.
func (r *Reader) Stream(ctx context.Context, query string, allow func(duckdb.StmtType) error) (array.RecordReader, error) {
	if r.conn == nil {
		return nil, errors.New("stream: reader is closed")
	}
	if r.open != nil {
		return nil, errors.New("stream: the reader's last result is not released")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &streamResult{ctx: ctx, stop: r.interruptWhenDone(ctx), refs: 1, owner: r}
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()
	var err error
	if s.stmt, err = r.prepare(query); err != nil {
		return nil, withContext(ctx, err)
	}
	s.has |= hasStmt
	if allow != nil {
		if err := allow(duckdb.StmtType(mapping.PreparedStatementType(s.stmt))); err != nil {
			return nil, err
		}
	}
	var pending mapping.PendingResult
	// DuckDB 1.5's C API marks its streaming calls deprecated (a
	// replacement is announced, not there yet); the driver has none.
	if bindings.PendingPreparedStreaming(s.stmt, &pending) == mapping.StateError {
		msg := mapping.PendingError(pending)
		mapping.DestroyPending(&pending)
		return nil, withContext(ctx, duckError(msg, errorTypeOf(msg)))
	}
	state := mapping.ExecutePending(pending, &s.res)
	mapping.DestroyPending(&pending)
	s.has |= hasResult
	if state == mapping.StateError {
		return nil, withContext(ctx, resultError(&s.res))
	}
	s.opts = arrowmapping.ResultGetArrowOptions(&s.res)
	s.has |= hasOpts
	n := mapping.ColumnCount(&s.res)
	names := make([]string, n)
	types := make([]mapping.LogicalType, n)
	for i := range n {
		names[i] = mapping.ColumnName(&s.res, i)
		types[i] = mapping.ColumnLogicalType(&s.res, i)
	}
	schema, ed := arrowmapping.NewArrowSchema(s.opts, types, names)
	for i := range types {
		mapping.DestroyLogicalType(&types[i])
	}
	if err := errorData(ed); err != nil {
		return nil, fmt.Errorf("arrow schema of the result: %w", err)
	}
	s.schema = schema
	ok = true
	r.open = s
	return s, nil
}

// streamResult is Stream's record reader.
type streamResult struct {
	ctx    context.Context
	stop   func() // ends the interrupter
	owner  *Reader
	has    uint8 // which of stmt, res, opts need destroying
	stmt   mapping.PreparedStatement
	res    mapping.Result
	opts   arrowmapping.ArrowOptions
	schema *arrow.Schema

	mu     sync.Mutex
	refs   int64
	cur    arrow.RecordBatch
	err    error
	done   bool // the result ended, or failed
	closed bool
}

const (
	hasStmt uint8 = 1 << iota
	hasResult
	hasOpts
)

var _ array.RecordReader = (*streamResult)(nil)

func (s *streamResult) Schema() *arrow.Schema { return s.schema }

func (s *streamResult) Next() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	if s.closed {
		if s.err == nil {
			s.err = errors.New("stream: the reader is released")
		}
		return false
	}
	if s.done {
		return false
	}
	if err := s.ctx.Err(); err != nil {
		s.err, s.done = err, true
		return false
	}
	chunk := mapping.FetchChunk(s.res)
	if chunk.Ptr == nil {
		// the end, or the query failed: the result says which
		s.done = true
		if msg := mapping.ResultError(&s.res); msg != "" {
			s.err = withContext(s.ctx, resultError(&s.res))
		}
		return false
	}
	rec, ed := arrowmapping.DataChunkToArrowArray(s.opts, s.schema, chunk)
	mapping.DestroyDataChunk(&chunk)
	if err := errorData(ed); err != nil {
		s.err, s.done = fmt.Errorf("arrow record of the result: %w", err), true
		return false
	}
	s.cur = rec
	return true
}

func (s *streamResult) RecordBatch() arrow.RecordBatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Record is RecordBatch, for array.RecordReader's older callers.
func (s *streamResult) Record() arrow.RecordBatch { return s.RecordBatch() }

func (s *streamResult) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *streamResult) Retain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.refs++
	}
}

func (s *streamResult) Release() {
	s.mu.Lock()
	s.refs--
	last := s.refs == 0
	s.mu.Unlock()
	if last {
		s.close()
	}
}

// close ends the query and frees what DuckDB holds for it: the result
// first (which stops a query still running; the interrupter, when ctx has
// ended, keeps that short), then the interrupter, then the statement.
func (s *streamResult) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	if s.has&hasResult != 0 {
		mapping.DestroyResult(&s.res)
	}
	s.stop()
	if s.has&hasOpts != 0 {
		arrowmapping.DestroyArrowOptions(&s.opts)
	}
	if s.has&hasStmt != 0 {
		mapping.DestroyPrepare(&s.stmt)
	}
	if s.owner != nil && s.owner.open == s {
		s.owner.open = nil
	}
}

// withContext ties a DuckDB error to the end of ctx, when that is what
// interrupted the statement, so that callers can tell a deadline from a
// failing query with errors.Is.
func withContext(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	return err
}

func resultError(res *mapping.Result) error {
	return duckError(mapping.ResultError(res), duckdb.ErrorType(mapping.ResultErrorType(res)))
}

func errorData(ed mapping.ErrorData) error {
	defer mapping.DestroyErrorData(&ed)
	if !mapping.ErrorDataHasError(ed) {
		return nil
	}
	return duckError(mapping.ErrorDataMessage(ed), duckdb.ErrorType(mapping.ErrorDataErrorType(ed)))
}

func duckError(msg string, typ duckdb.ErrorType) error {
	return &duckdb.Error{Type: typ, Msg: msg}
}

// errorTypeOf reads the type from the prefix of a DuckDB message, for the
// calls that return a message alone ("INTERRUPT Error: Interrupted!"):
// the few types that callers tell apart.
func errorTypeOf(msg string) duckdb.ErrorType {
	prefix, _, _ := strings.Cut(msg, ": ")
	switch prefix {
	case "INTERRUPT Error":
		return duckdb.ErrorTypeInterrupt
	case "Out of Memory Error":
		return duckdb.ErrorTypeOutOfMemory
	case "Permission Error":
		return duckdb.ErrorTypePermission
	case "Invalid Input Error":
		return duckdb.ErrorTypeInvalidInput
	case "Parser Error":
		return duckdb.ErrorTypeParser
	case "Binder Error":
		return duckdb.ErrorTypeBinder
	case "Catalog Error":
		return duckdb.ErrorTypeCatalog
	}
	return duckdb.ErrorTypeInvalid
}
