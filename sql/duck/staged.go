package duck

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trainscope/trainscope/stream"
)

// StagedTables are the tables a staged store (Options.Staged) keeps as
// Parquet files beside the database instead of in it: the bulk of a
// trace's rows. DuckDB appends them at 0.2-0.6M rows/s on the machines we
// measure (60-90 ns a value, and twice per row when a commit holds less
// than a row group); arrow-go writes the same rows as Parquet at 1-2M
// rows/s a core (bench/RESULTS.md). Each is a view of the same name over
// the table <name>_rows (rows inserted by other means) and the files.
// counters too: a trace's memory events and the agents' GPU samples are
// its third largest table. stacks too: each rank's call tree, ~500 rows,
// which a commit of many small traces appended at 12 ms a commit.
// step_account too: each rank's account of its steps, ~370 rows of 14
// columns on bench/tmp/r64, which the appender took 26 ms a commit for
// (the drain of r64 x 16 spent more on it than on every other small
// table together).
var StagedTables = []string{"slices_core", "slices_detail", "counters", "stacks", "step_account"}

// stagedRows is the table under a staged table's view.
func stagedRows(table string) string { return table + "_rows" }

// stagedSchemaFile is the empty file that gives each staged table's glob
// a match, and every column its type, before any batch has come.
const stagedSchemaFile = "schema/empty.parquet"

// StagedDir is where the store's staged files live ("" unless staged):
// beside the database file, <name>.staged/<table>/run=<token>/<seq>.parquet.
func (s *Store) StagedDir() string { return s.staged }

// Staged says whether table is kept as files in this store.
func (s *Store) Staged(table string) bool {
	return s.staged != "" && slices.Contains(StagedTables, table)
}

// ExcludeReaders is for a merge of staged files, between the moment the
// merged file comes into view and the moment the files it holds are gone:
// it reports false, at once, while any Reader of the store is open, and
// otherwise keeps new ones waiting until unlock is called. Merges are put
// off rather than queries held up (a query may last minutes, and a
// merge can wait for the next commit); the store's own connection and its
// forks are the caller's to keep apart (serve holds its mutex for both).
func (s *Store) ExcludeReaders() (unlock func(), ok bool) {
	if !s.swap.TryLock() {
		return nil, false
	}
	return s.swap.Unlock, true
}

// WaitExcludeReaders is ExcludeReaders for a merge that has been put off
// too often (queries that overlap without a pause would put it off for
// ever): it keeps new Readers waiting at once, waits for the open ones to
// close, and returns, or gives up when ctx ends.
func (s *Store) WaitExcludeReaders(ctx context.Context) (unlock func(), err error) {
	got := make(chan struct{})
	go func() {
		s.swap.Lock()
		close(got)
	}()
	select {
	case <-got:
		return s.swap.Unlock, nil
	case <-ctx.Done():
		go func() { // let go of the lock once it comes
			<-got
			s.swap.Unlock()
		}()
		return nil, ctx.Err()
	}
}

// ReadersHeldBack says whether new Readers would wait now: a merge is
// swapping files, or waits for the open Readers to close.
func (s *Store) ReadersHeldBack() bool {
	if !s.swap.TryRLock() {
		return true
	}
	s.swap.RUnlock()
	return false
}

// stagedDirFor is the staged folder of the database file at path.
func stagedDirFor(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".staged"
}

// isStaged says whether the database already holds staged tables (a
// store opened staged before), whatever the caller's options say now.
func (s *Store) isStaged(ctx context.Context) (bool, error) {
	var n int
	err := s.conn.QueryRowContext(ctx, "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND table_name = ?",
		stagedRows(StagedTables[0])).Scan(&n)
	return n > 0, err
}

// unstage turns each staged table back into a plain table of its name, so
// that the schema (CREATE TABLE IF NOT EXISTS, ALTER TABLE ... ADD COLUMN)
// applies to it as to any store's; stage makes it a view again. A table
// staged only since this version (counters) is a plain table still in a
// store staged before, and is left as it is.
func (s *Store) unstage(ctx context.Context) error {
	for _, t := range StagedTables {
		var n int
		if err := s.conn.QueryRowContext(ctx, "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND table_name = ?", stagedRows(t)).Scan(&n); err != nil {
			return fmt.Errorf("open staged table %s: %w", t, err)
		}
		if n == 0 {
			continue
		}
		for _, q := range []string{"DROP VIEW IF EXISTS " + quoteIdent(t), "ALTER TABLE " + quoteIdent(stagedRows(t)) + " RENAME TO " + quoteIdent(t)} {
			if _, err := s.conn.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("open staged table %s: %w", t, err)
			}
		}
	}
	return nil
}

// stage makes each staged table a view over its rows table and its files,
// writing the schema file first, then settles the files a crash left
// behind.
func (s *Store) stage(ctx context.Context) error {
	for _, t := range StagedTables {
		schemaFile := filepath.Join(s.staged, t, stagedSchemaFile)
		if err := os.MkdirAll(filepath.Dir(schemaFile), 0o755); err != nil {
			return fmt.Errorf("staged table %s: %w", t, err)
		}
		for _, q := range []string{
			// the table's columns as the schema has them now, written anew
			// at each open, so that a column the schema added reads as NULL
			// in older files
			fmt.Sprintf("COPY (SELECT * FROM %s LIMIT 0) TO %s (FORMAT parquet)", quoteIdent(t), Literal(schemaFile)),
			"ALTER TABLE " + quoteIdent(t) + " RENAME TO " + quoteIdent(stagedRows(t)),
			"CREATE VIEW " + quoteIdent(t) + " AS " + stagedView(t, quoteIdent(stagedRows(t)), s.staged),
		} {
			if _, err := s.conn.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("staged table %s: %w", t, err)
			}
		}
	}
	return s.settleStaged(ctx)
}

// Seal tells an in-memory staged store that it takes no more rows but
// its own staged files (analyze, once its traces are loaded): each staged
// table whose rows table is empty becomes a view over its files alone,
// read as the schema file has them. The views of a staged store unite
// the columns of their files by name at every query, because a file
// store keeps files of earlier versions; an in-memory store's files are
// all of this one, and uniting them was a quarter of the detectors'
// planning (syn8: 260-290 ms over 75 queries, 200-210 ms sealed). A view
// whose columns would differ sealed keeps the way it was. Inserting into
// a staged table of a sealed store is an error; staging more files is
// not (they are of this version too).
func (s *Store) Seal(ctx context.Context) error {
	if s.staged == "" || s.Path != "" {
		return nil
	}
	for _, t := range StagedTables {
		var n int
		if err := s.conn.QueryRowContext(ctx, "SELECT count(*) FROM "+quoteIdent(stagedRows(t))).Scan(&n); err != nil {
			return fmt.Errorf("seal %s: %w", t, err)
		}
		if n > 0 {
			continue
		}
		before, err := s.columns(ctx, t)
		if err != nil {
			return fmt.Errorf("seal %s: %w", t, err)
		}
		sealed := fmt.Sprintf("SELECT * FROM read_parquet(%s, hive_partitioning = false)", stagedGlob(t, s.staged))
		if err := s.Exec(ctx, "CREATE OR REPLACE VIEW "+quoteIdent(t)+" AS "+sealed); err != nil {
			return fmt.Errorf("seal %s: %w", t, err)
		}
		after, err := s.columns(ctx, t)
		if err == nil && slices.Equal(before, after) {
			continue
		}
		if err := s.Exec(ctx, "CREATE OR REPLACE VIEW "+quoteIdent(t)+" AS "+stagedView(t, quoteIdent(stagedRows(t)), s.staged)); err != nil {
			return fmt.Errorf("seal %s: %w", t, err)
		}
	}
	s.sealed.Store(true)
	return nil
}

// columns is the names and types of the columns of relation t.
func (s *Store) columns(ctx context.Context, t string) ([]string, error) {
	rows, err := s.conn.QueryContext(ctx, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+quoteIdent(t)+")")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n, typ string
		if err := rows.Scan(&n, &typ); err != nil {
			return nil, err
		}
		out = append(out, n+" "+typ)
	}
	return out, rows.Err()
}

// stagedView is the query of staged table t's view: the rows of table
// rows (t's rows table) and t's files in the staged folder dir.
func stagedView(t, rows, dir string) string {
	return fmt.Sprintf("SELECT * FROM %s UNION ALL BY NAME SELECT * FROM read_parquet(%s, union_by_name = true, hive_partitioning = false)", rows, stagedGlob(t, dir))
}

// stagedGlob is the SQL literal of the glob of staged table t's files.
func stagedGlob(t, dir string) string { return Literal(filepath.Join(dir, t, "*", "*.parquet")) }

// stagedHere makes a read-only staged store read the files beside it: its
// views name the folder it was written in, and a data folder that was
// moved since (copied to another machine) would find none there, or
// another store's. Read-only, the views cannot be made again: temporary
// views of the same names, which shadow them on the store's own
// connection (Query, Conn: what `trainscope sql --db` runs on), read the
// files beside the database instead. Its Readers keep the recorded views.
func (s *Store) stagedHere(ctx context.Context) error {
	was, err := s.isStaged(ctx)
	if err != nil || !was {
		return err
	}
	abs, err := filepath.Abs(s.Path)
	if err != nil {
		return err
	}
	dir := stagedDirFor(abs)
	for _, t := range StagedTables {
		var def string
		err := s.conn.QueryRowContext(ctx, "SELECT sql FROM duckdb_views() WHERE database_name = current_database() AND view_name = ?", t).Scan(&def)
		if err != nil {
			return fmt.Errorf("staged table %s: %w", t, err)
		}
		if strings.Contains(def, stagedGlob(t, dir)) {
			continue
		}
		q := "CREATE OR REPLACE TEMP VIEW " + quoteIdent(t) + " AS " + stagedView(t, "main."+quoteIdent(stagedRows(t)), dir)
		if _, err := s.conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("staged table %s, read from %s: %w", t, dir, err)
		}
	}
	return nil
}

// StagedTmp is the name a staged file has until the transaction that
// records it has committed: the views read only *.parquet.
const StagedTmp = ".tmp"

// settleStaged finishes what a crash interrupted. A file is written as
// <path>.tmp, recorded in staged_files in the transaction that holds its
// batches' ledger rows, and renamed once that transaction has committed:
// a .tmp file whose path is recorded is renamed now, any other .tmp file
// (its transaction never committed) is removed, and so is a .parquet file
// that no row records. A recorded file that is gone is an error: its rows
// are lost, and the ledger says they were stored.
func (s *Store) settleStaged(ctx context.Context) error {
	recorded := map[string]bool{}
	rows, err := s.conn.QueryContext(ctx, "SELECT path FROM staged_files")
	if err != nil {
		return fmt.Errorf("staged files: %w", err)
	}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return err
		}
		recorded[filepath.FromSlash(p)] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("staged files: %w", err)
	}
	present := map[string]bool{}
	err = filepath.WalkDir(s.staged, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(s.staged, path)
		if err != nil {
			return err
		}
		switch {
		case strings.HasSuffix(rel, StagedTmp):
			final := strings.TrimSuffix(rel, StagedTmp)
			if recorded[final] {
				present[final] = true
				return os.Rename(path, filepath.Join(s.staged, final))
			}
			return os.Remove(path)
		case filepath.Base(filepath.Dir(rel)) == filepath.Dir(stagedSchemaFile):
			return nil
		case !recorded[rel]:
			return os.Remove(path)
		}
		present[rel] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("staged files under %s: %w", s.staged, err)
	}
	var missing []string
	for p := range recorded {
		if !present[p] {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("staged files under %s: %d recorded files are missing (%s): their rows are lost; restore them, or delete their staged_files rows to go on without them",
			s.staged, len(missing), strings.Join(missing[:min(3, len(missing))], ", "))
	}
	return nil
}

// deleteStaged removes the staged files of a run, as DeleteRun does its
// rows: their staged_files rows in the caller's transaction, the files
// once it committed (files run after commit).
func (s *Store) deleteStaged(ctx context.Context, runID string) (files []string, err error) {
	rows, err := s.conn.QueryContext(ctx, "DELETE FROM staged_files WHERE run_id = ? RETURNING path", runID)
	if err != nil {
		return nil, fmt.Errorf("delete run %s's staged files: %w", runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		files = append(files, filepath.Join(s.staged, filepath.FromSlash(p)))
	}
	return files, rows.Err()
}

func removeFiles(files []string) error {
	var errs []error
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Literal is s as an SQL string literal, for the places a statement
// cannot take a parameter (file paths in COPY, read_parquet, SET).
func Literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// RunRows is a query of table's rows of one run, its one argument the
// run's id: for a staged table, the rows under its view and the run's own
// folder of files, where the view would open every run's files.
func (s *Store) RunRows(table, run string) string {
	q := "SELECT * FROM " + quoteIdent(table) + " WHERE run_id = $1"
	if !s.Staged(table) {
		return q
	}
	// the run's folder is named by stream.RunPathToken, which no other
	// run shares; files staged before were in the folder of its subject
	// token (stream.RunToken), which x/y and x_y share: read both, rows
	// of other runs are filtered out
	var globs []string
	for _, tok := range []string{stream.RunPathToken(run), stream.RunToken(run)} {
		glob := filepath.Join(s.staged, table, "run="+tok, "*.parquet")
		if files, _ := filepath.Glob(glob); len(files) > 0 && !slices.Contains(globs, Literal(glob)) {
			globs = append(globs, Literal(glob))
		}
	}
	if len(globs) == 0 {
		return "SELECT * FROM " + quoteIdent(stagedRows(table)) + " WHERE run_id = $1"
	}
	return fmt.Sprintf("SELECT * FROM %s WHERE run_id = $1 UNION ALL BY NAME SELECT * FROM read_parquet([%s], union_by_name = true, hive_partitioning = false) WHERE run_id = $1",
		quoteIdent(stagedRows(table)), strings.Join(globs, ", "))
}
