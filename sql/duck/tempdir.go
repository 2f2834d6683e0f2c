package duck

import (
	"os"
	"path/filepath"
	"time"
)

// An in-memory store's temp folder holds what DuckDB spills and, staged,
// the run's Parquet files (a 3 GB trace's: 212 MB). Close removes it; a
// process killed first (kill -9, out of memory) cannot. So each folder
// holds a lock file its store keeps locked while it lives (the system
// releases the lock when the process dies, whatever kills it), and
// opening a store removes the folders whose lock it can take: their
// stores are gone. A lock, not a process id: ids are reused, and
// containers sharing a temp folder do not see each other's.

// tempPrefix starts the name of every in-memory store's temp folder.
const tempPrefix = "trainscope-duckdb-"

// tempLockName is the lock file in each.
const tempLockName = ".lock"

// newTempDir makes an in-memory store's temp folder, locked for as long as
// the returned file stays open, after removing those left by stores that
// are gone.
func newTempDir() (dir string, lock *os.File, err error) {
	removeOrphanTempDirs(os.TempDir())
	dir, err = os.MkdirTemp("", tempPrefix)
	if err != nil {
		return "", nil, err
	}
	lock, err = os.Create(filepath.Join(dir, tempLockName))
	if err == nil {
		err = lockFile(lock)
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, lock, nil
}

// removeOrphanTempDirs removes the temp folders under root whose lock file
// nobody holds. A folder without one was made before locks, or is being
// made right now: it goes only if it is empty and an hour old.
func removeOrphanTempDirs(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, tempPrefix+"*"))
	for _, d := range dirs {
		f, err := os.OpenFile(filepath.Join(d, tempLockName), os.O_RDWR, 0)
		if err != nil {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() && time.Since(fi.ModTime()) > time.Hour {
				os.Remove(d) // only if empty
			}
			continue
		}
		if unheld(f) {
			os.RemoveAll(d)
		}
		f.Close()
	}
}
