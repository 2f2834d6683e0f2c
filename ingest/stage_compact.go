package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trainscope/trainscope/sql/duck"
)

// A staged store gains a file per table and run with every commit: at a
// commit every 250 ms, 14,400 an hour for one slow run, and every query
// over the staged views opens each. So once a run's table holds
// compactFiles files under compactBytes, they are merged into one. Only
// small files: a busy run's files are few for their rows. A busy run's
// small files (tens of thousands of rows) are joined by copying their row
// groups, which costs their bytes' I/O; had they been decoded and written
// again, the drain of r64 x 16 would run at 0.75-0.78M events/s instead
// of 1.10M (bench/RESULTS.md).
var compactFiles = 64

// maxMergeDeferrals is how many commits a merge may be put off for open
// queries before it waits for them instead (holding new ones back until
// they are done): Grafana panels refreshing side by side can keep a query
// open at every commit, and the run's files would pile up for good. At a
// commit every 250 ms, that is a merge held back for about 10 s.
var maxMergeDeferrals = 40

const compactBytes = 4 << 20

// stagedKey is a staged table of one run.
type stagedKey struct{ table, run string }

// noteStaged counts the files a commit added; compactStaged merges those
// of the keys that reached compactFiles.
func (c *Consumer) noteStaged(ctx context.Context, files []*stagedFile) error {
	if c.small == nil {
		c.small = map[stagedKey]int{}
		rows, err := c.St.Query(ctx, "SELECT tbl, coalesce(run_id, ''), count(*) FROM staged_files WHERE bytes < ? GROUP BY ALL", compactBytes)
		if err != nil {
			c.small = nil
			return fmt.Errorf("count staged files: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var k stagedKey
			var n int
			if err := rows.Scan(&k.table, &k.run, &n); err != nil {
				c.small = nil
				return err
			}
			c.small[k] = n
		}
		if err := rows.Err(); err != nil {
			c.small = nil
			return err
		}
		return nil // the query counted files committed so far, these included
	}
	for _, f := range files {
		if f.bytes < compactBytes {
			c.small[stagedKey{f.table, f.run}]++
		}
	}
	return nil
}

// compactStaged merges the small files of every table and run that has
// compactFiles of them, holding the store. A merge writes one file with
// DuckDB, then swaps it for the files it holds: the staged_files rows in
// one transaction, then the new file renamed into view and the old ones
// removed; a crash in between is settled when the store is opened again,
// as for a commit. The swap waits for no Reader of the store (Flight SQL's
// queries): while one is open it is put off to a later commit, and the
// merged file kept for it, so that no query lists a file the swap removes
// or sees rows twice. A merge put off maxMergeDeferrals times waits for
// the open queries instead. The scheduler's passes hold the store, as this
// does.
func (c *Consumer) compactStaged(ctx context.Context) {
	for k, n := range c.small {
		if n < compactFiles {
			continue
		}
		c.Mu.Lock()
		m := c.merges[k]
		var err error
		if m == nil {
			m, err = prepareMerge(ctx, c.St, k)
		}
		swapped := false
		if err == nil && m != nil {
			wait := m.deferred >= maxMergeDeferrals
			if wait {
				c.logf("merge the staged files of %s for run %q: put off %d times by open queries; holding new ones back until those are done", k.table, k.run, m.deferred)
				c.Stats.CompactionsWaited.Add(1)
			}
			swapped, err = m.swap(ctx, c.St, wait)
		}
		c.Mu.Unlock()
		switch {
		case err != nil:
			c.logf("merge the staged files of %s for run %q: %v", k.table, k.run, err)
			delete(c.merges, k)
			c.small = nil // count again next time
			return
		case m == nil: // fewer than two small files after all
			c.small[k] = 0
		case !swapped:
			if c.merges == nil {
				c.merges = map[stagedKey]*merge{}
			}
			c.merges[k] = m
			m.deferred++
			c.Stats.CompactionsDeferred.Add(1)
		default:
			delete(c.merges, k)
			// those that came while the swap was put off stay counted
			c.small[k] = max(n-len(m.paths), 0)
			if m.file.bytes < compactBytes {
				c.small[k]++
			}
			c.Stats.Compactions.Add(1)
		}
	}
}

// merge is a merged file written and synced but not yet swapped for the
// files it holds.
type merge struct {
	file  *stagedFile
	paths []string // the files it holds
	rels  []string // their staged_files paths
	// deferred counts the commits that put off its swap
	deferred int
}

// prepareMerge writes the small staged files of one table and run as one
// file, not yet in view; nil when there are fewer than two. Files of
// concatMinRows rows or more, on average, are joined row group by row
// group (concatParquet); smaller ones, or ones that cannot be joined so,
// are decoded and written again (mergeParquet), and files of different
// schemas united by DuckDB (copyMerge).
func prepareMerge(ctx context.Context, st *duck.Store, k stagedKey) (*merge, error) {
	rows, err := st.Query(ctx, "SELECT path, rows FROM staged_files WHERE tbl = ? AND coalesce(run_id, '') = ? AND bytes < ? ORDER BY path",
		k.table, k.run, compactBytes)
	if err != nil {
		return nil, err
	}
	m := &merge{file: &stagedFile{table: k.table, run: k.run}}
	for rows.Next() {
		var p string
		var n int64
		if err := rows.Scan(&p, &n); err != nil {
			rows.Close()
			return nil, err
		}
		m.paths = append(m.paths, filepath.Join(st.StagedDir(), filepath.FromSlash(p)))
		m.rels = append(m.rels, p)
		m.file.rows += n
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(m.paths) < 2 {
		return nil, err
	}
	// named by the time: no plain file (named by its sequence) nor an
	// earlier merge has that name
	m.file.rel = filepath.Join(filepath.Dir(filepath.FromSlash(m.rels[0])), fmt.Sprintf("m-%020d.parquet", time.Now().UnixNano()))
	tmp := m.tmp(st)
	err = errNotConcatenable
	if m.file.rows >= concatMinRows*int64(len(m.paths)) {
		err = concatParquet(tmp, m.paths)
	}
	if errors.Is(err, errNotConcatenable) {
		err = mergeParquet(ctx, tmp, m.paths)
	}
	switch {
	case errors.Is(err, errSchemasDiffer):
		if err := copyMerge(ctx, st, tmp, m.paths); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	}
	if fi, err := os.Stat(tmp); err == nil {
		m.file.bytes = fi.Size()
	}
	return m, nil
}

// copyMerge merges files of different schemas with DuckDB's COPY, which
// unites their columns by name.
func copyMerge(ctx context.Context, st *duck.Store, tmp string, paths []string) error {
	list := make([]string, len(paths))
	for i, p := range paths {
		list[i] = duck.Literal(p)
	}
	copyQ := fmt.Sprintf("COPY (SELECT * FROM read_parquet([%s], union_by_name = true, hive_partitioning = false)) TO %s (FORMAT parquet, COMPRESSION snappy)",
		strings.Join(list, ", "), duck.Literal(tmp))
	if err := st.Exec(ctx, copyQ); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := syncFile(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func (m *merge) tmp(st *duck.Store) string {
	return filepath.Join(st.StagedDir(), m.file.rel+duck.StagedTmp)
}

// swap puts the merged file in place of those it holds, unless a Reader
// of the store is open (false, nil: try again later), or, with wait, once
// the open Readers are closed. A merge whose files are no longer all
// recorded (the run was deleted meanwhile) is dropped with an error.
func (m *merge) swap(ctx context.Context, st *duck.Store, wait bool) (bool, error) {
	var unlock func()
	if wait {
		var err error
		if unlock, err = st.WaitExcludeReaders(ctx); err != nil {
			return false, nil // the consumer is stopping
		}
	} else {
		var ok bool
		if unlock, ok = st.ExcludeReaders(); !ok {
			return false, nil
		}
	}
	defer unlock()
	args := make([]any, len(m.rels))
	for i, r := range m.rels {
		args[i] = r
	}
	err := st.Tx(ctx, func() error {
		q := "DELETE FROM staged_files WHERE path IN (?" + strings.Repeat(", ?", len(args)-1) + ")"
		res, err := st.Conn().ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != int64(len(args)) {
			return errors.Join(err, fmt.Errorf("%d of the %d files merged are no longer recorded: merge dropped", len(args)-int(n), len(args)))
		}
		return st.Exec(ctx, "INSERT INTO staged_files (path, tbl, run_id, rows, bytes, staged_ns) VALUES (?, ?, ?, ?, ?, ?)",
			filepath.ToSlash(m.file.rel), m.file.table, m.file.run, m.file.rows, m.file.bytes, time.Now().UnixNano())
	})
	if err != nil {
		os.Remove(m.tmp(st))
		return false, err
	}
	if err := settleStaged(st.StagedDir(), []*stagedFile{m.file}, true); err != nil {
		return true, err // the next open renames it
	}
	for _, p := range m.paths {
		if err := os.Remove(p); err != nil {
			return true, err
		}
	}
	return true, nil
}

// dropMerges removes the merged files whose swap was put off: a consumer
// that stops leaves none behind (the next open of the store would remove
// them, as files it has no record of).
func (c *Consumer) dropMerges() {
	for k, m := range c.merges {
		os.Remove(m.tmp(c.St))
		delete(c.merges, k)
	}
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
