package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trainscope/trainscope/ingest/watch"
)

// In --runs-in mode the GPU counters go to the run whose folder changed
// last, and none to a run before any folder exists.
func TestRunFoldersLatest(t *testing.T) {
	root := t.TempDir()
	rf := &runFolders{root: root, started: map[string]bool{}, logf: t.Logf,
		base: watch.Config{Poll: time.Second, Settle: time.Second, GiveUp: time.Minute}}
	publish := func(context.Context, string, string) error { return nil }
	ctx := context.Background()
	if err := rf.scan(ctx, publish, true); err != nil || rf.Latest() != "" {
		t.Fatalf("empty root: latest %q, %v", rf.Latest(), err)
	}
	old := time.Now().Add(-time.Hour)
	for i, run := range []string{"old-job", "new-job", "mid-job"} {
		d := filepath.Join(root, run)
		os.MkdirAll(d, 0o755)
		mod := old.Add(time.Duration([]int{0, 30, 10}[i]) * time.Minute)
		os.Chtimes(d, mod, mod)
	}
	if err := rf.scan(ctx, publish, true); err != nil {
		t.Fatal(err)
	}
	if got := rf.Latest(); got != "new-job" {
		t.Errorf("latest %q, want new-job", got)
	}
}
