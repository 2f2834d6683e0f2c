package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/internal/analyze"
	"github.com/trainscope/trainscope/internal/cli"
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

// A command a signal cancelled exits 128+signal, saying it was
// interrupted, rather than 1 with "context canceled".
func TestInterruptedExitStatus(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&cli.Interrupted{Sig: syscall.SIGINT})
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
	var rep report.Report
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
	if err := analyze.WriteReport(&rep, "md", false, "", &md); err != nil {
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
