//go:build unix

package duck

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Opening an in-memory store removes the temp folders of stores that are
// gone (their lock file unheld: a process killed before Close) and empty
// folders without a lock an hour old, and leaves those of live stores and
// other folders without a lock file alone.
func TestOrphanTempDirsRemoved(t *testing.T) {
	root := t.TempDir()
	t.Setenv("TMPDIR", root)
	ctx := context.Background()
	live, err := Open(ctx, "", Options{Staged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if filepath.Dir(live.tempDir) != root {
		t.Fatalf("temp folder %s not under TMPDIR %s", live.tempDir, root)
	}
	// a store killed before Close: its folder and lock file, nobody holding it
	orphan := filepath.Join(root, tempPrefix+"gone")
	if err := os.MkdirAll(filepath.Join(orphan, "staged"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{tempLockName, "staged/big.parquet"} {
		if err := os.WriteFile(filepath.Join(orphan, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// folders without a lock file: one with files, one empty and made
	// just now (a store being opened), one empty and old (left before
	// locks)
	unlocked := filepath.Join(root, tempPrefix+"older")
	fresh := filepath.Join(root, tempPrefix+"fresh")
	stale := filepath.Join(root, tempPrefix+"stale")
	for _, d := range []string{unlocked, fresh, stale} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(unlocked, "spill.tmp"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, d := range []string{unlocked, stale} {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	next, err := Open(ctx, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	for dir, want := range map[string]bool{orphan: false, live.tempDir: true, unlocked: true, fresh: true, stale: false, next.tempDir: true} {
		_, err := os.Stat(dir)
		if got := err == nil; got != want {
			t.Errorf("%s: there %v, want %v", filepath.Base(dir), got, want)
		}
	}
	dir := live.tempDir
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Close left %s: %v", dir, err)
	}
}
