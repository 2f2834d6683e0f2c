package archive_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/archive"
	"github.com/trainscope/trainscope/sql/duck"
)

// loaded is a store holding the bundled sample once per run id.
func loaded(t *testing.T, runs ...string) *duck.Store {
	t.Helper()
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	files, err := ingest.Discover([]string{sample})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range runs {
		if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: run, Rank: -1}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// Run ids that differ only in punctuation (x/y and x_y, exp.1 and exp_1)
// get partitions of their own: writing one no longer replaces the other's
// files, and each reads back with its own rows. A run id of letters,
// digits, '-' and '_' keeps the folder it had.
func TestArchivePunctuationRunsApart(t *testing.T) {
	ctx := context.Background()
	runs := []string{"x/y", "x_y", "exp.1", "exp_1", "a%2Fb", "a/b"}
	st := loaded(t, runs...)
	dir := t.TempDir()
	at := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	folders := map[string]string{}
	for _, run := range runs {
		w, err := archive.WriteRun(ctx, st, dir, run, at)
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Removed) != 0 {
			t.Errorf("writing run %q removed %v", run, w.Removed)
		}
		folders[run] = filepath.Join(dir, "slices_core", "day="+w.Day)
	}
	for run, want := range map[string]string{"x/y": "run=x%2Fy", "x_y": "run=x_y", "exp.1": "run=exp%2E1", "exp_1": "run=exp_1", "a%2Fb": "run=a%252Fb"} {
		if _, err := os.Stat(filepath.Join(folders[run], want, "data_0.parquet")); err != nil {
			t.Errorf("run %q: %v", run, err)
		}
	}
	q, _ := queryNode(t, &archive.Attacher{Dir: dir})
	var total int64
	for _, run := range runs {
		for _, table := range []string{"slices", "runs", "ranks", "steps"} {
			n0, d0 := digest(t, st, table, run)
			n1, d1 := digest(t, q, table, run)
			if n0 == 0 || n0 != n1 || d0 != d1 {
				t.Errorf("%s of run %q: %d rows in the store, %d through the archive (or other values)", table, run, n0, n1)
			}
		}
		n, _ := digest(t, q, "slices", run)
		total += n
	}
	if n, _ := digest(t, q, "slices", ""); n != total {
		t.Errorf("the archive holds %d slices, its runs %d", n, total)
	}
}

// An archive written before run ids were escaped named x/y's folder
// run=x_y. Writing x/y now removes that folder when it holds x/y's rows,
// and leaves it when it holds x_y's.
func TestArchiveLegacyFolders(t *testing.T) {
	ctx := context.Background()
	st := loaded(t, "x/y", "x_y")
	at := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	old := func(dir, run string) string {
		t.Helper()
		// as the last version wrote it, on another day
		f := filepath.Join(dir, "runs", "day=2020-01-01", "run=x_y")
		if err := os.MkdirAll(f, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := st.Exec(ctx, "COPY (SELECT * FROM runs WHERE run_id = "+duck.Literal(run)+") TO "+duck.Literal(filepath.Join(f, "data_0.parquet"))+" (FORMAT parquet)"); err != nil {
			t.Fatal(err)
		}
		return f
	}

	dir := t.TempDir()
	f := old(dir, "x/y")
	w, err := archive.WriteRun(ctx, st, dir, "x/y", at)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f); err == nil || len(w.Removed) != 1 || w.Removed[0] != "runs/day=2020-01-01/run=x_y" {
		t.Errorf("x/y's old folder: removed %v", w.Removed)
	}

	dir = t.TempDir()
	f = old(dir, "x_y")
	w, err = archive.WriteRun(ctx, st, dir, "x/y", at)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f); err != nil || len(w.Removed) != 0 {
		t.Errorf("x_y's folder: removed %v (%v)", w.Removed, err)
	}
	q, _ := queryNode(t, &archive.Attacher{Dir: dir})
	for _, run := range []string{"x/y", "x_y"} {
		if n, _ := digest(t, q, "runs", run); n != 1 {
			t.Errorf("run %q: %d runs rows in the archive", run, n)
		}
	}
}
