package ingest

import (
	"context"
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
// small files: a merge rewrites its rows (merging 32 files of ~1.5 MB, as
// a busy run makes, took the drain of syn8 x 4 from 0.74M to 0.56M events/s),
// while a busy run's files are few for their rows.
var compactFiles = 64

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
// DuckDB, swaps the staged_files rows in one transaction, then renames the
// new file into view and removes the old ones; a crash in between is
// settled when the store is opened again, as for a commit. A query that
// lists the folder while the files are swapped may fail or see rows twice;
// the scheduler's passes hold the store, so they never do.
func (c *Consumer) compactStaged(ctx context.Context) {
	for k, n := range c.small {
		if n < compactFiles {
			continue
		}
		c.Mu.Lock()
		merged, err := compactRun(ctx, c.St, k)
		c.Mu.Unlock()
		if err != nil {
			c.logf("merge the staged files of %s for run %q: %v", k.table, k.run, err)
			c.small = nil // count again next time
			return
		}
		c.small[k] = 0
		if merged.bytes < compactBytes {
			c.small[k] = 1
		}
		c.Stats.Compactions.Add(1)
	}
}

// compactRun merges the small staged files of one table and run into one.
func compactRun(ctx context.Context, st *duck.Store, k stagedKey) (*stagedFile, error) {
	rows, err := st.Query(ctx, "SELECT path, rows FROM staged_files WHERE tbl = ? AND coalesce(run_id, '') = ? AND bytes < ? ORDER BY path",
		k.table, k.run, compactBytes)
	if err != nil {
		return nil, err
	}
	var paths []string
	var args []any
	merged := &stagedFile{table: k.table, run: k.run}
	for rows.Next() {
		var p string
		var n int64
		if err := rows.Scan(&p, &n); err != nil {
			rows.Close()
			return nil, err
		}
		paths = append(paths, filepath.Join(st.StagedDir(), filepath.FromSlash(p)))
		args = append(args, p)
		merged.rows += n
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(paths) < 2 {
		return merged, err
	}
	// named by the time: no plain file (named by its sequence) nor an
	// earlier merge has that name
	merged.rel = filepath.Join(filepath.Dir(filepath.FromSlash(args[0].(string))), fmt.Sprintf("m-%020d.parquet", time.Now().UnixNano()))
	tmp := filepath.Join(st.StagedDir(), merged.rel+duck.StagedTmp)
	list := make([]string, len(paths))
	for i, p := range paths {
		list[i] = duck.Literal(p)
	}
	copyQ := fmt.Sprintf("COPY (SELECT * FROM read_parquet([%s], union_by_name = true, hive_partitioning = false)) TO %s (FORMAT parquet, COMPRESSION snappy)",
		strings.Join(list, ", "), duck.Literal(tmp))
	if err := st.Exec(ctx, copyQ); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if err := syncFile(tmp); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if fi, err := os.Stat(tmp); err == nil {
		merged.bytes = fi.Size()
	}
	err = st.Tx(ctx, func() error {
		q := "DELETE FROM staged_files WHERE path IN (?" + strings.Repeat(", ?", len(args)-1) + ")"
		if err := st.Exec(ctx, q, args...); err != nil {
			return err
		}
		return st.Exec(ctx, "INSERT INTO staged_files (path, tbl, run_id, rows, bytes, staged_ns) VALUES (?, ?, ?, ?, ?, ?)",
			filepath.ToSlash(merged.rel), k.table, k.run, merged.rows, merged.bytes, time.Now().UnixNano())
	})
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if err := settleStaged(st.StagedDir(), []*stagedFile{merged}, true); err != nil {
		return merged, err // the next open renames it
	}
	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			return merged, err
		}
	}
	return merged, nil
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
