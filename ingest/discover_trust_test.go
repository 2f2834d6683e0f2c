package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bound is how long a call may take before a test calls it hung: a
// failure bound for calls that used to block forever, not a timing
// assertion.
const bound = 30 * time.Second

// A Read whose context is cancelled returns though a reader is stuck in a
// read that does not heed the context (a file on a hung mount).
func TestReadReturnsWhenCancelled(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	checkFile = func(string) error {
		close(started)
		<-release
		return errors.New("released")
	}
	defer func() { checkFile = checkRegular }()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		var c Collect
		_, err := Read(ctx, &c, []string{"stuck.json"}, Options{Rank: -1, Workers: 1})
		errc <- err
	}()
	<-started
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Read: %v, want context.Canceled", err)
		}
	case <-time.After(bound):
		t.Fatalf("Read did not return within %s of its context's end", bound)
	}
}

// truncatedCopy writes the first half of a sample rank's gzip as name.
func truncatedCopy(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile("../bench/sample/rank-1.sampled.pt.trace.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// With SkipBad a file that cannot be read is recorded in Stats (path and
// error) and the others are read; without it the first such file ends the
// read, naming it.
func TestReadSkipBad(t *testing.T) {
	dir := t.TempDir()
	bad := truncatedCopy(t, dir, "rank-2.pt.trace.json.gz")
	notJSON := filepath.Join(dir, "rank-3.json")
	os.WriteFile(notJSON, []byte("hello"), 0o644)
	files := []string{"../bench/sample/rank-0.sampled.pt.trace.json.gz", "../bench/sample/rank-1.sampled.pt.trace.json.gz", bad, notJSON}

	var c Collect
	_, err := Read(context.Background(), &c, files, Options{Rank: -1, Workers: 1})
	Release(c.Batches)
	if !IsInputError(err) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("strict read: %v; want an input error naming %s", err, bad)
	}

	var warned []string
	c = Collect{}
	stats, err := Read(context.Background(), &c, files, Options{Rank: -1, SkipBad: true, Warn: func(s string) { warned = append(warned, s) }})
	defer Release(c.Batches)
	if err != nil {
		t.Fatal(err)
	}
	got := stats.Bad()
	if len(got) != 2 || got[0].Path != bad || got[1].Path != notJSON {
		t.Fatalf("bad files %+v, want %s and %s", got, bad, notJSON)
	}
	if !strings.Contains(got[0].Skipped, "gzip") || !IsInputError(got[0].Err) || strings.HasPrefix(got[0].Skipped, bad) {
		t.Errorf("truncated file recorded as %q (%v)", got[0].Skipped, got[0].Err)
	}
	if !strings.Contains(got[1].Skipped, "expected a JSON object") {
		t.Errorf("not-JSON file recorded as %q", got[1].Skipped)
	}
	if w := strings.Join(warned, "\n"); !strings.Contains(w, "skipping "+bad+": ") || !strings.Contains(w, "skipping "+notJSON+": ") {
		t.Errorf("warnings do not name the skipped files:\n%s", w)
	}
	ranks := map[int32]bool{}
	for _, f := range stats.Files {
		if f.Err == nil && f.Skipped == "" {
			ranks[f.Rank] = true
		}
	}
	if len(ranks) != 2 || !ranks[0] || !ranks[1] {
		t.Errorf("ranks read %v, want 0 and 1", ranks)
	}

	// nothing left: still an input error, naming what was skipped
	c2 := Collect{}
	_, err = Read(context.Background(), &c2, []string{bad}, Options{Rank: -1, SkipBad: true})
	Release(c2.Batches)
	if !IsInputError(err) || !strings.Contains(err.Error(), "nothing to analyze") || !strings.Contains(err.Error(), bad) {
		t.Errorf("only bad files: %v", err)
	}
}
