package odwire

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trainscope/trainscope/internal/agent"
	"github.com/trainscope/trainscope/internal/ondemand"
)

// A trace is published once it has settled, with its process's rank; one
// over the size limit is given up, never read.
func TestStepPublishesSettledTraceWithinLimit(t *testing.T) {
	dir := t.TempDir()
	small, big := filepath.Join(dir, "rank2_a.json"), filepath.Join(dir, "rank5_b.json")
	os.WriteFile(small, []byte(`{"traceEvents": []}`), 0o644)
	os.WriteFile(big, make([]byte, 4096), 0o644)
	clk := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	s := &Source{Now: clk.Now, settle: time.Second, dir: dir}
	var published []string
	n := agent.Node{Logf: t.Logf, PublishCapture: func(_ context.Context, run, path string, rank int) error {
		published = append(published, run+":"+filepath.Base(path)+":"+rankText(rank))
		return nil
	}}
	c := &ondemand.Capture{ID: "c1", Run: "job", MaxTraceBytes: 1024}
	ts := []*target{{Target: ondemand.Target{PID: 1, Rank: 2, Paths: []string{small}}}, {Target: ondemand.Target{PID: 2, Rank: 5, Paths: []string{big}}}}
	for _, tg := range ts {
		s.step(context.Background(), n, c, tg, "")
	}
	if len(published) != 0 || ts[0].done {
		t.Fatalf("published before the file settled: %v", published)
	}
	if !ts[1].done || !strings.Contains(ts[1].why, "over the 1024-byte limit") {
		t.Errorf("the big trace: done %v, %q", ts[1].done, ts[1].why)
	}
	clk.Advance(time.Second)
	s.step(context.Background(), n, c, ts[0], "")
	if !ts[0].done || ts[0].why != "" || len(published) != 1 || published[0] != "job:rank2_a.json:2" {
		t.Errorf("published %v, target %+v", published, ts[0])
	}
	if _, err := os.Stat(small); !os.IsNotExist(err) {
		t.Errorf("the published trace is still in the agent's folder: %v", err)
	}
	if _, err := os.Stat(big); err != nil {
		t.Errorf("the trace given up was removed: %v", err)
	}
}

// With keep_traces, or for a trace outside the agent's folder (libkineto's
// /tmp fallback), a published trace stays where it is.
func TestPublishedTraceKept(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		name string
		keep bool
		file string
	}{
		{"keep_traces", true, filepath.Join(dir, "rank0_a.json")},
		{"not the agent's folder", false, filepath.Join(elsewhere, "libkineto_activities_7.json")},
	} {
		os.WriteFile(tc.file, []byte(`{"traceEvents": []}`), 0o644)
		clk := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
		s := &Source{Now: clk.Now, settle: time.Second, dir: dir}
		s.cfg.KeepTraces = tc.keep
		n := agent.Node{Logf: t.Logf, PublishCapture: func(context.Context, string, string, int) error { return nil }}
		c := &ondemand.Capture{ID: "c1", Run: "job", MaxTraceBytes: 1024}
		tg := &target{Target: ondemand.Target{PID: 7, Rank: 0, Paths: []string{tc.file}}}
		s.step(context.Background(), n, c, tg, "")
		clk.Advance(time.Second)
		s.step(context.Background(), n, c, tg, "")
		if !tg.done || tg.why != "" {
			t.Fatalf("%s: not published: %+v", tc.name, tg)
		}
		if _, err := os.Stat(tc.file); err != nil {
			t.Errorf("%s: the trace was removed: %v", tc.name, err)
		}
	}
}

// The traces folder must be the agent's own folder, not a link.
func TestPrepareDirRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	os.Mkdir(real, 0o755)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareDir(link, false); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("a link: %v", err)
	}
	got, err := prepareDir(filepath.Join(dir, "new"), true)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(got); fi.Mode().Perm() != 0o777 || fi.Mode()&os.ModeSticky == 0 {
		t.Errorf("a folder shared with other users: %v, want sticky and writable by all", fi.Mode())
	}
}
