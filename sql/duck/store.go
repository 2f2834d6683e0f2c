package duck

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/trainscope/trainscope/sql/schema"
)

// Store is one DuckDB database with a single connection. It is not safe for
// concurrent use: one goroutine owns it (readers hand it batches); Fork
// gives another goroutine a connection of its own.
type Store struct {
	Path string

	connector *duckdb.Connector
	db        *sql.DB
	conn      *sql.Conn
	arrow     *duckdb.Arrow
	tempDir   string   // an in-memory store's spill folder, removed at Close
	tempLock  *os.File // held while the store lives (see newTempDir)
	memLimit  string   // Options.MemoryLimit, which WithMemoryLimit puts back
	staged    string   // the folder of a staged store's files, or ""
	// swap keeps a staged store's Readers and the merges of its files
	// apart (see ExcludeReaders); shared with its forks
	swap *sync.RWMutex
	// sealed: an in-memory staged store whose views read its files alone
	// (see Seal); shared with its forks
	sealed *atomic.Bool
	// forks holds a token for each open fork (Options.MaxConns - 1 of
	// them); a fork's Close hands its token back. Nil on a fork itself.
	forks chan struct{}
	// release hands a fork's token back, once
	release func()
}

// Options tune Open.
type Options struct {
	// Threads caps DuckDB's worker threads; 0 leaves DuckDB's default.
	Threads int
	// MemoryLimit such as "1GB"; empty leaves DuckDB's default.
	MemoryLimit string
	// ReadOnly opens an existing file without applying the schema.
	ReadOnly bool
	// Staged keeps a file store's StagedTables as Parquet files beside it
	// (see StagedTables); a store once opened staged stays so. In memory,
	// the files go to the store's own temporary folder, removed by Close.
	Staged bool
	// CheckpointWAL is the size of a file store's write-ahead log at which
	// a commit checkpoints it, such as "256MB": what a long-lived store
	// (serve's) needs, or its log grows without end (930 MB after 5.7M
	// events) and a restart replays all of it. Empty: 64GB, that is never
	// before Close, which suits a bulk load.
	CheckpointWAL string
	// MaxConns bounds the connections of the store and its forks together
	// (Fork); 0 means DefaultMaxConns. Readers (NewReader) are not counted.
	MaxConns int
}

// DefaultMaxConns is Options.MaxConns when none is given: the store's own
// connection and seven forks.
const DefaultMaxConns = 8

func (opt Options) maxConns() int {
	if opt.MaxConns <= 0 {
		return DefaultMaxConns
	}
	return opt.MaxConns
}

// ErrNoConn is Fork's answer when every connection the store may have
// (Options.MaxConns) is taken: a fork never waits for one, because the
// goroutine that would hand it back may be the one waiting.
var ErrNoConn = errors.New("every connection of the database is in use")

// Open opens (creating if needed) the database at path; "" is in-memory.
func Open(ctx context.Context, path string, opt Options) (*Store, error) {
	dsn := path
	if opt.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
		dsn += "?access_mode=READ_ONLY"
	} else if path != "" {
		if dir := filepath.Dir(path); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("open database %s: %w", path, err)
			}
		}
	}
	connector, err := duckdb.NewConnector(dsn, nil)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", displayPath(path), err)
	}
	db := sql.OpenDB(connector)
	// database/sql's own bound would make a fork wait for a connection,
	// forever if its holder waits on the fork: Fork's tokens bound the
	// connections instead, and never wait.
	db.SetMaxOpenConns(0)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		connector.Close()
		return nil, fmt.Errorf("open database %s: %w", displayPath(path), err)
	}
	s := &Store{Path: path, connector: connector, db: db, conn: conn, swap: new(sync.RWMutex), sealed: new(atomic.Bool),
		forks: make(chan struct{}, opt.maxConns()-1)}
	err = conn.Raw(func(dc any) error {
		a, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		s.arrow = a
		return err
	})
	if err == nil {
		// Bulk loads append hundreds of MB; DuckDB's automatic checkpoints
		// (every 16 MB of WAL by default, in-memory databases included) stall
		// an insert for half a second each time. Checkpoint once, at Close,
		// unless the store is long-lived.
		_, err = conn.ExecContext(ctx, "SET checkpoint_threshold = '"+cmp.Or(strings.ReplaceAll(opt.CheckpointWAL, "'", ""), "64GB")+"'")
	}
	if err == nil {
		// This DuckDB build fetches extensions from the internet on first
		// use (a cast to INET, say). The machines it runs on may have no
		// internet, and a query server must not download code: only the
		// bundled extensions are used.
		_, err = conn.ExecContext(ctx, "SET autoinstall_known_extensions = false")
	}
	if err == nil {
		_, err = conn.ExecContext(ctx, "SET autoload_known_extensions = false")
	}

	if err == nil && path == "" && !opt.ReadOnly {
		// An in-memory database spills to ".tmp" under the working folder
		// by default, which may be read-only or shared: give it a folder
		// of its own in the system's temp folder instead.
		s.tempDir, s.tempLock, err = newTempDir()
		if err == nil {
			_, err = conn.ExecContext(ctx, "SET temp_directory = "+Literal(s.tempDir))
		}
	}
	if err == nil && opt.Threads > 0 {
		_, err = conn.ExecContext(ctx, fmt.Sprintf("SET threads = %d", opt.Threads))
	}
	if err == nil && opt.MemoryLimit != "" {
		s.memLimit = strings.ReplaceAll(opt.MemoryLimit, "'", "")
		_, err = conn.ExecContext(ctx, "SET memory_limit = '"+s.memLimit+"'")
	}
	if err == nil && !opt.ReadOnly {
		err = s.applySchemaStaged(ctx, opt.Staged)
	}
	if err == nil && opt.ReadOnly && path != "" {
		err = s.stagedHere(ctx)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// applySchemaStaged applies the schema; to a staged store (asked for, or
// one that was staged before: its files must stay in view) in one
// transaction with turning its staged tables back into views.
func (s *Store) applySchemaStaged(ctx context.Context, want bool) error {
	was := false
	if s.Path == "" {
		if !want || s.tempDir == "" {
			return s.applySchema(ctx)
		}
		s.staged = filepath.Join(s.tempDir, "staged")
	} else {
		var err error
		if was, err = s.isStaged(ctx); err != nil {
			return fmt.Errorf("open database %s: %w", s.Path, err)
		}
		if !want && !was {
			return s.applySchema(ctx)
		}
		// the views name the folder absolute: a query from another working
		// folder (trainscope sql --db) must find the files too
		abs, err := filepath.Abs(s.Path)
		if err != nil {
			return fmt.Errorf("open database %s: %w", s.Path, err)
		}
		s.staged = stagedDirFor(abs)
	}
	return s.Tx(ctx, func() error {
		if was {
			if err := s.unstage(ctx); err != nil {
				return err
			}
		}
		if err := s.applySchema(ctx); err != nil {
			return err
		}
		return s.stage(ctx)
	})
}

// WithMemoryLimit runs f with DuckDB's memory limit set to limit (such as
// "256MB"), then puts back the limit the store was opened with (DuckDB's
// default when none). The limit is the database's, not the connection's.
func (s *Store) WithMemoryLimit(ctx context.Context, limit string, f func() error) error {
	if err := s.Exec(ctx, "SET memory_limit = '"+strings.ReplaceAll(limit, "'", "")+"'"); err != nil {
		return fmt.Errorf("set DuckDB's memory_limit to %q: %w", limit, err)
	}
	err := f()
	restore := "RESET memory_limit"
	if s.memLimit != "" {
		restore = "SET memory_limit = '" + s.memLimit + "'"
	}
	if rerr := s.Exec(context.WithoutCancel(ctx), restore); err == nil {
		err = rerr
	}
	return err
}

// Fork is a second connection to the same database, for work that runs
// beside the store's own (detectors of one pass, say): it sees every table,
// view and macro of the database, but neither the store's temporary tables
// nor its settings made with SET for the session. Close it before the
// store; closing it closes only its connection. When Options.MaxConns
// connections are open already, Fork fails at once with ErrNoConn rather
// than wait for one.
func (s *Store) Fork(ctx context.Context) (*Store, error) {
	if s.db == nil {
		return nil, fmt.Errorf("fork of a fork")
	}
	select {
	case s.forks <- struct{}{}:
	default:
		return nil, fmt.Errorf("fork database %s: %w (%d)", displayPath(s.Path), ErrNoConn, cap(s.forks)+1)
	}
	release := sync.OnceFunc(func() { <-s.forks })
	conn, err := s.db.Conn(ctx)
	if err != nil {
		release()
		return nil, fmt.Errorf("fork database %s: %w", displayPath(s.Path), err)
	}
	f := &Store{Path: s.Path, conn: conn, staged: s.staged, swap: s.swap, sealed: s.sealed, release: release}
	if err := conn.Raw(func(dc any) error {
		a, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		f.arrow = a
		return err
	}); err != nil {
		conn.Close()
		release()
		return nil, fmt.Errorf("fork database %s: %w", displayPath(s.Path), err)
	}
	return f, nil
}

// Forks is how many forks the store may have open at once
// (Options.MaxConns - 1).
func (s *Store) Forks() int { return cap(s.forks) }

func displayPath(p string) string {
	if p == "" {
		return "(in memory)"
	}
	return p
}

func (s *Store) applySchema(ctx context.Context) error {
	for _, f := range schema.Files() {
		if _, err := s.conn.ExecContext(ctx, f.SQL); err != nil {
			return fmt.Errorf("apply schema %s: %w", f.Name, err)
		}
	}
	return nil
}

// Conn is the store's connection. Callers must not close it.
func (s *Store) Conn() *sql.Conn { return s.conn }

// Exec runs a statement.
func (s *Store) Exec(ctx context.Context, query string, args ...any) error {
	_, err := s.conn.ExecContext(ctx, query, args...)
	return err
}

// Query runs a query; the caller closes the rows before the next call.
func (s *Store) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return s.conn.QueryContext(ctx, query, args...)
}

// QueryByKey runs a query whose rows are a string key and n numbers, and
// returns the numbers by key.
func (s *Store) QueryByKey(ctx context.Context, q string, n int) (map[string][]float64, error) {
	rows, err := s.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]float64{}
	for rows.Next() {
		var k string
		v := make([]float64, n)
		dst := []any{&k}
		for i := range v {
			dst = append(dst, &v[i])
		}
		if err := rows.Scan(dst...); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// QueryArrow runs a query and returns its result as Arrow records.
func (s *Store) QueryArrow(ctx context.Context, query string, args ...any) (array.RecordReader, error) {
	return s.arrow.QueryContext(ctx, query, args...)
}

// Insert appends a record batch to a table, matching columns by name.
func (s *Store) Insert(ctx context.Context, table string, rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	return s.InsertAll(ctx, table, []arrow.RecordBatch{rec})
}

// insertViews numbers the views InsertAll registers.
var insertViews atomic.Int64

// InsertAll appends record batches of one schema to a table in one
// statement: many small batches cost one insert, not one each.
func (s *Store) InsertAll(ctx context.Context, table string, recs []arrow.RecordBatch) error {
	if len(recs) == 0 {
		return nil
	}
	if !s.Staged(table) {
		var n int64
		for _, r := range recs {
			n += r.NumRows()
		}
		if n <= appendMaxRows && appendable(recs[0].Schema()) {
			switch appended, err := s.appendRecords(ctx, table, recs); {
			case err == nil:
				return nil
			case appended: // the flush failed
				return fmt.Errorf("insert into %s: %w", table, err)
			}
		}
	}
	rdr, err := array.NewRecordReader(recs[0].Schema(), recs)
	if err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	defer rdr.Release()
	// unique across the database's connections: a fork inserts beside its store
	view := fmt.Sprintf("incoming_%d", insertViews.Add(1))
	release, err := s.arrow.RegisterView(rdr, view)
	if err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	defer release()
	// The view must not outlive the stream it reads, whatever happens.
	defer s.conn.ExecContext(context.WithoutCancel(ctx), "DROP VIEW IF EXISTS "+view)
	into := table
	if s.Staged(table) {
		if s.sealed.Load() {
			return fmt.Errorf("insert into %s: the store is sealed: its view reads its staged files alone", table)
		}
		into = stagedRows(table) // rows inserted, not staged as files by the ingestor
	}
	if _, err := s.conn.ExecContext(ctx, "INSERT INTO "+quoteIdent(into)+" BY NAME SELECT * FROM "+view); err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	return nil
}

// Tx runs fn in a transaction: committed when fn returns nil, rolled back
// otherwise. Everything fn does on the store is part of it.
func (s *Store) Tx(ctx context.Context, fn func() error) error {
	if _, err := s.conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(); err != nil {
		if _, rerr := s.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
			return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		return err
	}
	// not cancelled: a COMMIT interrupted on its way may have committed
	// all the same, and the caller could not tell
	if _, err := s.conn.ExecContext(context.WithoutCancel(ctx), "COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// ExportParquet writes every event and result table under dir, partitioned
// by run (hive layout: dir/<table>/run_id=<id>/data_0.parquet); slices is
// written whole, from the view over slices_core and slices_detail.
func (s *Store) ExportParquet(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("parquet export: %w", err)
	}
	// row order means nothing in the export; keeping it doubles COPY's
	// memory and time
	if err := s.Exec(ctx, "SET preserve_insertion_order = false"); err != nil {
		return fmt.Errorf("parquet export: %w", err)
	}
	defer s.Exec(context.WithoutCancel(ctx), "RESET preserve_insertion_order")
	for _, t := range ExportTables {
		var n int64
		if err := s.conn.QueryRowContext(ctx, "SELECT count(*) FROM "+quoteIdent(t)).Scan(&n); err != nil {
			return fmt.Errorf("parquet export %s: %w", t, err)
		}
		if n == 0 {
			continue
		}
		target := filepath.Join(dir, t)
		q := fmt.Sprintf("COPY (SELECT * FROM %s) TO %s (FORMAT parquet, PARTITION_BY (run_id), COMPRESSION zstd, OVERWRITE_OR_IGNORE true)",
			quoteIdent(t), Literal(target))
		if _, err := s.conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("parquet export %s: %w", t, err)
		}
	}
	return nil
}

// ExportTables are the tables ExportParquet writes.
var ExportTables = []string{"runs", "ranks", "process_groups", "threads", "stacks", "slices", "steps", "counters",
	"mem_segments", "mem_blocks", "mem_events", "mem_settings", "script_flags", "script_context", "step_account", "findings", "metrics", "node_history"}

// RunTables hold a run's events, one row set per run_id: what a run is
// made of, as loaded or ingested.
var RunTables = []string{"runs", "ranks", "process_groups", "threads", "stacks", "slices_core", "slices_detail", "steps", "counters",
	"mem_segments", "mem_blocks", "mem_events", "mem_settings", "script_flags", "script_context", "kernel_metrics", "step_account"}

// DeleteRun removes a run's events from every RunTables table and reports
// whether there were any, so that loading a run into a database that
// already holds one of that id replaces it instead of doubling its rows.
func (s *Store) DeleteRun(ctx context.Context, runID string) (bool, error) {
	var had bool
	var files []string
	err := s.Tx(ctx, func() error {
		for _, t := range RunTables {
			if s.Staged(t) {
				t = stagedRows(t)
			}
			res, err := s.conn.ExecContext(ctx, "DELETE FROM "+quoteIdent(t)+" WHERE run_id = ?", runID)
			if err != nil {
				return fmt.Errorf("delete run %s from %s: %w", runID, t, err)
			}
			if n, err := res.RowsAffected(); err == nil && n > 0 {
				had = true
			}
		}
		if s.staged != "" {
			var err error
			files, err = s.deleteStaged(ctx, runID)
			had = had || len(files) > 0
			return err
		}
		return nil
	})
	if err == nil {
		err = removeFiles(files)
	}
	return had, err
}

// Close releases the connection and the database.
func (s *Store) Close() error {
	var errs []error
	if s.conn != nil {
		errs = append(errs, s.conn.Close())
	}
	if s.release != nil {
		s.release()
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	if s.connector != nil {
		errs = append(errs, s.connector.Close())
	}
	if s.tempDir != "" {
		errs = append(errs, os.RemoveAll(s.tempDir))
		s.tempLock.Close()
	}
	return errors.Join(errs...)
}

func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// Transient says whether err is trouble of the moment (I/O, memory, an
// interrupted or conflicting transaction) that a retry may get past, as
// opposed to a statement that fails the same way every time it runs on the
// same data (a conversion, a constraint, an invalid value). A batch whose
// insert fails for a reason that is not transient can never be stored.
func Transient(err error) bool {
	var de *duckdb.Error
	if !errors.As(err, &de) {
		return false
	}
	switch de.Type {
	case duckdb.ErrorTypeIO, duckdb.ErrorTypeOutOfMemory, duckdb.ErrorTypeInterrupt, duckdb.ErrorTypeConnection,
		duckdb.ErrorTypeNetwork, duckdb.ErrorTypeTransaction, duckdb.ErrorTypeFatal, duckdb.ErrorTypeInternal,
		duckdb.ErrorTypePermission:
		return true
	}
	return false
}
