package duck

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"
	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// Reader is a second connection to a Store's database. The Store's own
// connection belongs to the goroutine that writes; a Reader lets another
// goroutine query at the same time, because DuckDB gives each connection
// its own transaction (MVCC): a query sees the rows committed before it
// started and never blocks the writer.
//
// A Reader is not safe for concurrent use either: open one per goroutine
// (or per query; opening one is cheap). Close every Reader before closing
// the Store.
type Reader struct {
	conn   driver.Conn
	arrow  *duckdb.Arrow
	raw    mapping.Connection // conn's C handle (see rawConn)
	unlock func()             // a staged store's: lets merges of its files go on
	open   *streamResult      // the result Stream returned last, until released
}

// NewReader opens a connection on the store's database, in memory or on
// disk. It inherits the database-wide settings Open applied (threads,
// memory limit, read-only access). On a staged store, no merge of staged
// files swaps them while a Reader is open (see ExcludeReaders), so a
// query never lists a file a merge removes, nor a merged file beside the
// files it holds.
func (s *Store) NewReader(ctx context.Context) (*Reader, error) {
	if s.connector == nil {
		return nil, errors.New("new reader: store is closed")
	}
	r := &Reader{}
	if s.staged != "" {
		s.swap.RLock()
		r.unlock = sync.OnceFunc(s.swap.RUnlock)
	}
	conn, err := s.connector.Connect(ctx)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("new reader on %s: %w", displayPath(s.Path), err)
	}
	r.conn = conn
	if r.arrow, err = duckdb.NewArrowFromConn(conn); err == nil {
		r.raw, err = rawConn(conn)
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("new reader on %s: %w", displayPath(s.Path), err)
	}
	return r, nil
}

// QueryArrow runs a query and returns its result as Arrow records, exactly
// as DuckDB converts them. The driver builds the whole result before the
// first record, outside DuckDB's memory_limit: for results of unknown size
// use Stream. The caller releases the reader before the next call. DuckDB runs every statement of a multi-statement string and keeps
// the last result: callers that take queries from outside must check them
// first.
func (r *Reader) QueryArrow(ctx context.Context, query string, args ...any) (array.RecordReader, error) {
	return r.arrow.QueryContext(ctx, query, args...)
}

// StatementType prepares query without running it and tells what kind of
// statement DuckDB takes it for (duckdb.STATEMENT_TYPE_SELECT, ...). It
// refuses more than one statement instead of running the first ones, as
// PrepareContext would. Preparing binds the query, and binding can touch
// the outside world (read_csv sniffs its file), so only prepare queries
// that are already known to be harmless. Preparing also plans the query,
// which can take as long as running it (DuckDB folds constant expressions
// then): StatementTypeContext bounds that by a context.
func (r *Reader) StatementType(query string) (duckdb.StmtType, error) {
	// driver.Conn.Prepare, unlike PrepareContext, refuses multi-statement
	// strings instead of executing all but the last statement.
	st, err := r.conn.Prepare(query)
	if err != nil {
		return duckdb.STATEMENT_TYPE_INVALID, err
	}
	defer st.Close()
	ds, ok := st.(*duckdb.Stmt)
	if !ok {
		return duckdb.STATEMENT_TYPE_INVALID, fmt.Errorf("prepare: unexpected statement type %T", st)
	}
	return ds.StatementType()
}

// Close releases the connection. Release every record reader first.
func (r *Reader) Close() error {
	if r == nil {
		return nil
	}
	if r.unlock != nil {
		defer r.unlock()
	}
	if r.conn == nil {
		return nil
	}
	if r.open != nil {
		// a result left unreleased: end its query (and its interrupter,
		// which must not outlive the connection) before disconnecting
		r.open.close()
	}
	err := r.conn.Close()
	r.conn = nil
	return err
}
