package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trainscope/trainscope/detectors"
)

// traceDir is a new folder holding the sample run's two ranks.
func traceDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range sampleRun {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, filepath.Base(f), b)
	}
	return dir
}

// The signal watcher, on its own clock: the first signal cancels the
// context with an *interrupted cause; a command that has not returned
// when the grace is over is ended with 128+signal; serve and agent, which
// stop on their own, are ended only by a second signal; nothing happens
// once the command returned.
func TestSignalWatch(t *testing.T) {
	type exit struct{ code int }
	setup := func(command string) (*signalWatch, chan os.Signal, chan struct{}, chan time.Time, chan exit, context.Context, *bytes.Buffer) {
		var errOut bytes.Buffer
		grace := make(chan time.Time, 1)
		exits := make(chan exit, 1)
		sw := &signalWatch{grace: signalGrace, errOut: &errOut,
			exit:  func(code int) { exits <- exit{code} },
			after: func(time.Duration) <-chan time.Time { return grace }}
		sw.running(command)
		ctx, cancel := context.WithCancelCause(context.Background())
		ch, done := make(chan os.Signal, 2), make(chan struct{})
		go func() { sw.watch(ch, done, cancel); close(exits) }()
		return sw, ch, done, grace, exits, ctx, &errOut
	}

	// analyze: the first signal, then the grace
	_, ch, _, grace, exits, ctx, errOut := setup("analyze")
	ch <- syscall.SIGINT
	<-ctx.Done()
	var in *interrupted
	if !errors.As(context.Cause(ctx), &in) || in.code() != 130 {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
	grace <- time.Time{}
	if e := <-exits; e.code != 130 || !strings.Contains(errOut.String(), "analyze did not stop within 3s") {
		t.Errorf("exit %d, %q", e.code, errOut.String())
	}

	// serve: no grace; a second signal ends it
	sw, ch, _, grace, exits, ctx, errOut := setup("serve")
	if sw.grace != 0 {
		t.Errorf("serve has a grace of %s", sw.grace)
	}
	ch <- syscall.SIGTERM
	<-ctx.Done()
	ch <- syscall.SIGINT
	if e := <-exits; e.code != 143 || !strings.Contains(errOut.String(), "interrupted by SIGTERM again (SIGINT)") {
		t.Errorf("exit %d, %q", e.code, errOut.String())
	}
	if len(grace) != 0 {
		t.Error("serve's grace timer was read")
	}

	// the command returned: the watcher leaves
	_, ch, done, _, exits, ctx, _ := setup("analyze")
	ch <- syscall.SIGINT
	<-ctx.Done()
	close(done)
	if _, ok := <-exits; ok {
		t.Error("exited after the command returned")
	}
}

// A command a signal cancelled exits 128+signal, saying it was
// interrupted, rather than 1 with "context canceled".
func TestInterruptedExitStatus(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&interrupted{syscall.SIGINT})
	var errOut bytes.Buffer
	code := run(ctx, []string{"analyze", "-q", traceDir(t)}, &bytes.Buffer{}, &errOut)
	if code != 130 || !strings.Contains(errOut.String(), "trainscope: interrupted by SIGINT: ") {
		t.Errorf("exit %d, stderr %q; want 130 and a line saying it was interrupted", code, errOut.String())
	}
}

// badTraceDir is the sample run's two ranks and a third rank's trace cut
// short.
func badTraceDir(t *testing.T) (dir, bad string) {
	dir = traceDir(t)
	b, err := os.ReadFile(sampleRun[1])
	if err != nil {
		t.Fatal(err)
	}
	return dir, writeFile(t, dir, "rank-2.sampled.pt.trace.json.gz", b[:len(b)/2])
}

// One truncated rank ends analyze (exit 2, naming it); with --skip-bad the
// other ranks are analysed and the report says which file was skipped and
// why.
func TestAnalyzeSkipBad(t *testing.T) {
	dir, bad := badTraceDir(t)
	code, out, errOut := trainscope(t, "analyze", "-q", dir)
	if code != 2 || out != "" || !strings.Contains(errOut, bad) {
		t.Fatalf("strict: exit %d, stderr %q; want 2 naming %s", code, errOut, bad)
	}
	code, out, errOut = trainscope(t, "analyze", "-q", "--skip-bad", "--format", "json", dir)
	if code != 0 {
		t.Fatalf("--skip-bad: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "skipping "+bad+": ") {
		t.Errorf("stderr does not name the skipped file: %q", errOut)
	}
	var rep detectors.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || len(rep.Runs[0].Ranks) != 2 {
		t.Fatalf("runs %+v, want one run of ranks 0 and 1", rep.Runs)
	}
	if rep.Status == nil || len(rep.Status.Missing) != 1 || !strings.HasPrefix(rep.Status.Missing[0], "skipped "+bad+" (") ||
		!strings.Contains(rep.Status.Missing[0], "gzip") || rep.Status.Partial {
		t.Fatalf("status %+v, want the truncated file as missing", rep.Status)
	}
	var md bytes.Buffer
	if err := writeReport(&rep, "md", false, "", &md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "> **Incomplete data**: skipped "+bad+" (") {
		t.Errorf("the markdown does not say the file was skipped:\n%s", md.String())
	}
}

// publish too: strict by default, and with --skip-bad it publishes the
// good ranks and names the file it skipped.
func TestPublishSkipBad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := agentServer(ctx, t)
	defer srv.Shutdown()
	dir, bad := badTraceDir(t)
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"publish", "-q", "--run", "strict", "--nats-url", srv.NATSURL(), dir}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), bad) {
		t.Fatalf("strict: exit %d, stderr %q; want 2 naming %s", code, errOut.String(), bad)
	}
	out.Reset()
	errOut.Reset()
	code = run(ctx, []string{"publish", "-q", "--skip-bad", "--run", "lenient", "--nats-url", srv.NATSURL(), dir}, &out, &errOut)
	if code != 0 {
		t.Fatalf("--skip-bad: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), ": 2 files,") || !strings.Contains(out.String(), "skipped 1 file(s)") || !strings.Contains(out.String(), "  "+bad+": ") {
		t.Errorf("stdout does not name the skipped file:\n%s", out.String())
	}
	waitGet(t, "http://"+srv.HTTPAddr()+"/runs/lenient/report", 20*time.Second)
	if n := storeCount(t, srv, "SELECT count(DISTINCT rank) FROM ranks WHERE run_id = 'lenient'"); n != 2 {
		t.Errorf("%d ranks published, want 2", n)
	}
}

// The agent publishes file by file: a file it cannot read is logged,
// retried until agent.give_up, then recorded as failed and skipped; the
// other files, and the other run folders, are published. With --once it
// then exits 2 naming it. Before, a run folder with a failed file stopped
// --runs-in --once before the folders after it.
func TestAgentSkipsBadFile(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Setenv("TRAINSCOPE_AGENT_GIVE_UP", "400ms")
	srv := agentServer(ctx, t)
	defer srv.Shutdown()
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	var bad string
	for i, run := range []string{"job-bad", "job-good"} {
		d := filepath.Join(root, run)
		os.Mkdir(d, 0o755)
		for _, f := range sampleRun {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, d, filepath.Base(f), b)
		}
		if i == 0 {
			bad = writeFile(t, d, "rank-2.json", []byte(`{"traceEvents": [}`))
		}
		// the folder with the bad file is taken first
		mod := old.Add(time.Duration(i) * time.Minute)
		os.Chtimes(d, mod, mod)
	}
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"agent", "--host", "node-1", "--nats-url", srv.NATSURL(), "--runs-in", root, "--once"}, &out, &errOut)
	log := errOut.String()
	if code != 2 || !strings.Contains(log, "giving up on rank-2.json") || !strings.Contains(log, bad) {
		t.Errorf("exit %d; want 2, and the log naming the bad file:\n%s", code, log)
	}
	if n := strings.Count(log, "published "); n != 4 {
		t.Errorf("published %d files, want the 4 good ones:\n%s", n, log)
	}
	for _, run := range []string{"job-bad", "job-good"} {
		waitGet(t, "http://"+srv.HTTPAddr()+"/runs/"+run+"/report", 20*time.Second)
		if n := storeCount(t, srv, "SELECT count(DISTINCT rank) FROM ranks WHERE run_id = '"+run+"'"); n != 2 {
			t.Errorf("run %s: %d ranks published, want 2", run, n)
		}
	}
}
