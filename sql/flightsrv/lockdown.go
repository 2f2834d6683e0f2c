package flightsrv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trainscope/trainscope/sql/duck"
)

// Lockdown is what DuckDB itself refuses on a served database, so that
// read-only does not rest on CheckReadOnly alone: whatever a query slips
// past the checks cannot read the machine's files, install or load
// extensions, or (with Lock) change a setting.
//
// DuckDB holds these settings for the whole database, not per connection
// (DuckDB 1.5: enable_external_access, allowed_directories and
// lock_configuration are all GLOBAL), so they bind the database's own
// writer as much as the queries:
//
//   - enable_external_access = false refuses every file and URL outside
//     Dirs (read_csv, read_text, read_parquet, glob, COPY, ATTACH of a
//     file, INSTALL, LOAD). The database's own file, its write-ahead log
//     and its spill files stay usable. Once off it cannot be turned back
//     on, nor Dirs changed, while the process runs.
//   - lock_configuration = true refuses every SET and RESET afterwards,
//     on every connection: only for a database whose own code changes no
//     setting after Apply (a query node), not one an ingestor writes
//     (it raises memory_limit for large batches).
type Lockdown struct {
	// Dirs are the folders the database reads and writes itself: a staged
	// store's files, the archive a query node's views read. Everything
	// under them stays readable by queries too (through the views, or a
	// table function that gets past the checks).
	Dirs []string
	// Lock locks DuckDB's configuration (see above).
	Lock bool
}

// Apply sets the lockdown on st's database, on a connection of its own
// (the store's connection belongs to its writer). It is one-way: nothing
// but a restart undoes it.
func (l Lockdown) Apply(ctx context.Context, st *duck.Store) error {
	dirs := make([]string, 0, len(l.Dirs))
	for _, d := range l.Dirs {
		if d == "" {
			continue
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("lock down the database: %w", err)
		}
		// a trailing separator, or /data/archive would let in
		// /data/archive-old: DuckDB compares prefixes
		dirs = append(dirs, duck.Literal(strings.TrimSuffix(abs, string(os.PathSeparator))+string(os.PathSeparator)))
	}
	stmts := []string{
		"SET allowed_directories = [" + strings.Join(dirs, ", ") + "]",
		"SET enable_external_access = false",
	}
	if l.Lock {
		stmts = append(stmts, "SET lock_configuration = true")
	}
	r, err := st.NewReader(ctx)
	if err != nil {
		return fmt.Errorf("lock down the database: %w", err)
	}
	defer r.Close()
	for _, q := range stmts {
		rdr, err := r.QueryArrow(ctx, q)
		if err != nil {
			return fmt.Errorf("lock down the database: %s: %w", q, err)
		}
		rdr.Release()
	}
	return nil
}
