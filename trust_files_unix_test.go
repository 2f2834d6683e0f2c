//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// hangBound is how long a child trainscope may take before a test calls
// it hung: a failure bound for commands that used to block forever, not a
// timing assertion.
const hangBound = 30 * time.Second

// fifo makes a named pipe at dir/name.
func fifo(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("cannot make a named pipe here: %v", err)
	}
	return p
}

// child is trainscope run as a process of its own (TestMain), so that a
// command that hangs can be signalled and killed.
type child struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr watchedBuffer
	done   chan struct{}
}

// watchedBuffer is a child's stderr, read while it runs: waitFor returns
// once a line has been written.
type watchedBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // a token after each write
}

func (w *watchedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return w.b.Write(p)
}

func (w *watchedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor returns once the child has written s on stderr; the test fails
// if it exits first or has not within hangBound.
func (c *child) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(hangBound)
	for !strings.Contains(c.stderr.String(), s) {
		select {
		case <-c.stderr.wrote:
		case <-c.done:
			if strings.Contains(c.stderr.String(), s) {
				return
			}
			t.Fatalf("exited without saying %q:\n%s", s, c.stderr.String())
		case <-deadline:
			t.Fatalf("did not say %q within %s:\n%s", s, hangBound, c.stderr.String())
		}
	}
}

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], args...), done: make(chan struct{})}
	c.stderr.wrote = make(chan struct{}, 1)
	c.cmd.Env = append(os.Environ(), "TRAINSCOPE_AS_MAIN=1")
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// wait is the child's exit status; the test fails if it has not exited
// within hangBound.
func (c *child) wait(t *testing.T, what string) int {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(hangBound):
		c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("%s: still running after %s; stderr:\n%s", what, hangBound, c.stderr.String())
	}
	return c.cmd.ProcessState.ExitCode()
}

// A named pipe among the traces is skipped with a line naming it, and the
// rest analysed; given by name, a pipe is refused as bad input. Before,
// analyze opened the pipe and waited for a writer forever.
func TestAnalyzeSkipsNamedPipe(t *testing.T) {
	dir := traceDir(t)
	pipe := fifo(t, dir, "pipe.pt.trace.json")
	fifo(t, dir, "ncu.csv") // a CSV is sniffed for an Nsight Compute header
	c := startChild(t, "analyze", "-q", dir)
	if code := c.wait(t, "analyze with a pipe in the folder"); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, c.stderr.String())
	}
	if want := "skipping " + pipe + ": a named pipe, not a regular file"; !strings.Contains(c.stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, c.stderr.String())
	}
	if !strings.Contains(c.stdout.String(), "2 rank(s) (0-1)") {
		t.Errorf("the two ranks were not analysed:\n%s", c.stdout.String())
	}

	c = startChild(t, "analyze", "-q", pipe)
	if code := c.wait(t, "analyze PIPE"); code != 2 || !strings.Contains(c.stderr.String(), pipe+": a named pipe") {
		t.Errorf("analyze PIPE: exit %d, stderr %q; want 2 naming the pipe", code, c.stderr.String())
	}
}

// waitForReader returns once a process has the pipe open for reading (a
// writer can open it then), and keeps that writer open until the test
// ends, so the reader blocks in its read rather than at EOF.
func waitForReader(t *testing.T, c *child, pipe string) {
	t.Helper()
	deadline := time.Now().Add(hangBound)
	for {
		fd, err := syscall.Open(pipe, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			t.Cleanup(func() { syscall.Close(fd) })
			return
		}
		if !errors.Is(err, syscall.ENXIO) {
			t.Fatal(err)
		}
		select {
		case <-c.done:
			t.Fatalf("exited (%v) before it opened %s; stderr:\n%s", c.cmd.ProcessState, pipe, c.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("did not open %s within %s", pipe, hangBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SIGINT and SIGTERM end a command stuck in a read that does not heed
// them (here the config, a pipe no one writes): the first after a short
// grace, a second at once, with a line saying so and the shell's status
// for the signal. Before, the first signal only cancelled a context the
// read ignored, and later ones were swallowed: the process never ended.
func TestSignalEndsBlockedCommand(t *testing.T) {
	for _, c := range []struct {
		name  string
		grace string // TRAINSCOPE_SIGNAL_GRACE
		sigs  []syscall.Signal
		code  int
		says  string
	}{
		{"SIGINT", "", []syscall.Signal{syscall.SIGINT}, 130, "interrupted by SIGINT: analyze did not stop within 3s; exiting"},
		{"SIGTERM", "1s", []syscall.Signal{syscall.SIGTERM}, 143, "interrupted by SIGTERM: analyze did not stop within 1s; exiting"},
		// no grace: only the second signal can end it
		{"twice", "0", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 130, "interrupted by SIGINT again (SIGINT): exiting now"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := traceDir(t)
			pipe := fifo(t, t.TempDir(), "config.yaml")
			if c.grace != "" {
				t.Setenv("TRAINSCOPE_SIGNAL_GRACE", c.grace)
			}
			p := startChild(t, "analyze", "-q", "--config", pipe, dir)
			waitForReader(t, p, pipe)
			for i, s := range c.sigs {
				if i > 0 { // two signals at once may arrive as one
					p.waitFor(t, "stopping (a second signal exits at once)")
				}
				p.cmd.Process.Signal(s)
			}
			code := p.wait(t, "analyze blocked on its config after "+c.name)
			if code != c.code || !strings.Contains(p.stderr.String(), c.says) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, p.stderr.String(), c.code, c.says)
			}
		})
	}
}

// Symbolic link loops and links to folders by a trace's name are bad
// input (exit 2, naming the path) or skipped, never exit 1; a folder named
// like a trace is walked.
func TestAnalyzeLinksAndFoldersNamedLikeTraces(t *testing.T) {
	dir := traceDir(t)
	loop := filepath.Join(dir, "loop.pt.trace.json")
	os.Symlink(filepath.Base(loop), loop)
	code, out, errOut := trainscope(t, "analyze", "-q", dir)
	if code != 2 || out != "" || !strings.Contains(errOut, loop+": a loop of symbolic links") {
		t.Errorf("a loop in the folder: exit %d, stderr %q; want 2 naming it", code, errOut)
	}
	code, _, errOut = trainscope(t, "analyze", "-q", loop)
	if code != 2 || !strings.Contains(errOut, loop+": a loop of symbolic links") {
		t.Errorf("a loop given: exit %d, stderr %q; want 2 naming it", code, errOut)
	}
	code, _, errOut = trainscope(t, "analyze", "-q", "--skip-bad", dir)
	if code != 0 || !strings.Contains(errOut, "skipping "+loop+": a loop of symbolic links") {
		t.Errorf("a loop with --skip-bad: exit %d, stderr %q; want 0 naming it", code, errOut)
	}
	os.Remove(loop)

	empty := filepath.Join(t.TempDir(), "x.json")
	os.Mkdir(empty, 0o755)
	code, _, errOut = trainscope(t, "analyze", "-q", empty)
	if code != 2 || !strings.Contains(errOut, empty+": no traces in this folder") {
		t.Errorf("a folder named x.json: exit %d, stderr %q; want 2 naming it", code, errOut)
	}
	// a link to a folder by a trace's name, and a folder so named, in
	// the folder walked
	link := filepath.Join(dir, "z.json")
	os.Symlink(empty, link)
	os.Mkdir(filepath.Join(dir, "y.json"), 0o755)
	code, out, errOut = trainscope(t, "analyze", "-q", dir)
	if code != 0 || !strings.Contains(errOut, "skipping "+link+": a link to a folder") || !strings.Contains(out, "2 rank(s) (0-1)") {
		t.Errorf("a link to a folder: exit %d, stderr %q; want 0, naming it", code, errOut)
	}
}
