//go:build unix

package ingest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mkfifo makes a named pipe at dir/name.
func mkfifo(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("cannot make a named pipe here: %v", err)
	}
	return p
}

// unblock ends a read some code is stuck in on the pipes: a writer that
// opens and closes them hands the reader EOF.
func unblock(pipes ...string) {
	for _, p := range pipes {
		if fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			syscall.Close(fd)
		}
	}
}

// within runs f, failing the test if it does not return within bound (it
// then unblocks the pipes until the stuck call ends).
func within(t *testing.T, what string, f func(), pipes ...string) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return
	case <-time.After(bound):
	}
	for {
		unblock(pipes...)
		select {
		case <-done:
			t.Fatalf("%s did not return within %s: it opened a named pipe", what, bound)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// A folder of traces may hold what is not a regular file: Discover skips a
// named pipe (by a trace's name or a CSV's, which it would sniff) and a
// link to a folder with a line naming each, never opening them; a link
// loop is kept for the reader to name.
func TestDiscoverSkipsNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.json"), []byte("{}"), 0o644)
	pipes := []string{mkfifo(t, dir, "pipe.json"), mkfifo(t, dir, "p.csv")}
	other := t.TempDir()
	os.Symlink(other, filepath.Join(dir, "z.json"))
	os.Symlink("loop.json", filepath.Join(dir, "loop.json"))
	var warned []string
	var files []string
	var err error
	within(t, "Discover", func() {
		files, err = DiscoverWith([]string{dir}, func(s string) { warned = append(warned, s) })
	}, pipes...)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a.json"), filepath.Join(dir, "loop.json")}
	if !slices.Equal(files, want) {
		t.Errorf("files %q, want %q", files, want)
	}
	all := strings.Join(warned, "\n")
	for _, w := range []string{
		"skipping " + filepath.Join(dir, "pipe.json") + ": a named pipe, not a regular file",
		"skipping " + filepath.Join(dir, "p.csv") + ": a named pipe, not a regular file",
		"skipping " + filepath.Join(dir, "z.json") + ": a link to a folder",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("warnings lack %q:\n%s", w, all)
		}
	}
	if len(warned) != 3 {
		t.Errorf("%d warnings, want 3:\n%s", len(warned), all)
	}
}

// A pipe or a link loop named on the command line is refused, naming it;
// Read refuses them too (an InputError), without opening a pipe.
func TestNonRegularPathsRefused(t *testing.T) {
	dir := t.TempDir()
	pipe := mkfifo(t, dir, "x.json")
	loop := filepath.Join(dir, "loop.json")
	os.Symlink("loop.json", loop)
	within(t, "Discover", func() {
		if _, err := Discover([]string{pipe}); err == nil || !strings.Contains(err.Error(), pipe+": a named pipe") {
			t.Errorf("Discover(pipe): %v", err)
		}
	}, pipe)
	if _, err := Discover([]string{loop}); err == nil || !strings.Contains(err.Error(), loop+": a loop of symbolic links") {
		t.Errorf("Discover(loop): %v", err)
	}
	for _, p := range []string{pipe, loop, dir} {
		within(t, "Read", func() {
			var c Collect
			_, err := Read(context.Background(), &c, []string{p}, Options{Rank: -1})
			if !IsInputError(err) || !strings.Contains(err.Error(), p+": a ") {
				t.Errorf("Read(%s): %v; want an input error naming it", p, err)
			}
		}, pipe)
	}
}

// A folder named through a link (a run's traces linked into a workspace)
// is walked as the folder it names, and its files keep the link's path;
// a link to a folder inside it is still skipped, not followed.
func TestDiscoverFolderThroughLink(t *testing.T) {
	real := t.TempDir()
	for _, n := range []string{"rank-0.json", "rank-1.json.gz"} {
		os.WriteFile(filepath.Join(real, n), []byte("{}"), 0o644)
	}
	os.Symlink(t.TempDir(), filepath.Join(real, "z.json"))
	link := filepath.Join(t.TempDir(), "run7")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	var warned []string
	files, err := DiscoverWith([]string{link}, func(s string) { warned = append(warned, s) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(link, "rank-0.json"), filepath.Join(link, "rank-1.json.gz")}
	if !slices.Equal(files, want) {
		t.Errorf("files %q, want %q", files, want)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "a link to a folder") {
		t.Errorf("warned %q, want the inner link to a folder named", warned)
	}
}
