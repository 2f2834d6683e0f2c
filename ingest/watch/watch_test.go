package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The timings here are small so the suite runs in about a second; Settle is
// several times the writers' pauses so a scheduling hiccup cannot make a
// file in progress look settled.
func testConfig(t *testing.T) Config {
	t.Helper()
	return Config{Dir: t.TempDir(), Poll: 5 * time.Millisecond, Settle: 30 * time.Millisecond, GiveUp: 250 * time.Millisecond}
}

// recorder is a Publisher that records each call (relative path and the
// content at the time) and answers with fn, nil by default.
type recorder struct {
	dir   string
	mu    sync.Mutex
	calls []call
	fn    func(ctx context.Context, path string, n int) error // n: 1-based call count for this path
}

type call struct {
	rel     string
	content string
	at      time.Time
	file    File
}

func (r *recorder) publish(ctx context.Context, p string) error {
	data, _ := os.ReadFile(p)
	f, _ := FileOf(ctx)
	r.mu.Lock()
	rel, _ := filepath.Rel(r.dir, p)
	r.calls = append(r.calls, call{rel: filepath.ToSlash(rel), content: string(data), at: time.Now(), file: f})
	n := 0
	for _, c := range r.calls {
		if c.rel == filepath.ToSlash(rel) {
			n++
		}
	}
	fn := r.fn
	r.mu.Unlock()
	if fn != nil {
		return fn(ctx, p, n)
	}
	return nil
}

func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *recorder) rels() []string {
	var out []string
	for _, c := range r.snapshot() {
		out = append(out, c.rel)
	}
	return out
}

// logBuf collects log lines from any goroutine.
type logBuf struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuf) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logBuf) contains(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func once(t *testing.T, cfg Config, r *recorder, logs *logBuf) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var lf func(string, ...any)
	if logs != nil {
		lf = logs.logf
	}
	return Once(ctx, cfg, r.publish, lf)
}

// startRun runs Run in the background; stop cancels it and returns its
// result and how long it took to return.
func startRun(t *testing.T, cfg Config, r *recorder, logs *logBuf) (stop func() (error, time.Duration)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, r.publish, logs.logf) }()
	var once sync.Once
	var res error
	var took time.Duration
	stop = func() (error, time.Duration) {
		once.Do(func() {
			start := time.Now()
			cancel()
			select {
			case res = <-done:
			case <-time.After(5 * time.Second):
				res = errors.New("Run did not return within 5s of cancellation")
			}
			took = time.Since(start)
		})
		return res, took
	}
	t.Cleanup(func() { stop() })
	return stop
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func readState(t *testing.T, cfg Config) *state {
	t.Helper()
	s, err := loadState(cfg.withDefaults().StatePath)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestChunkedWritePublishedOnceWhenStable(t *testing.T) {
	cfg := testConfig(t)
	cfg.Settle = 150 * time.Millisecond // 15x the writer's pauses
	r := &recorder{dir: cfg.Dir}
	logs := &logBuf{}
	stop := startRun(t, cfg, r, logs)

	p := filepath.Join(cfg.Dir, "w0.1700000000000.pt.trace.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range 12 {
		chunk := fmt.Sprintf(`{"chunk":%d},`, i)
		want.WriteString(chunk)
		if _, err := f.WriteString(chunk); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.Close()
	finished := time.Now()

	waitFor(t, "publish", func() bool { return len(r.snapshot()) > 0 })
	time.Sleep(100 * time.Millisecond) // room for a wrong second publish
	if err, _ := stop(); err != nil {
		t.Fatal(err)
	}
	calls := r.snapshot()
	if len(calls) != 1 {
		t.Fatalf("published %d times, want once; logs:\n%s", len(calls), logs)
	}
	if calls[0].content != want.String() {
		t.Errorf("published while incomplete: got %d bytes, want %d", len(calls[0].content), want.Len())
	}
	if calls[0].at.Before(finished) {
		t.Errorf("published %v before the writer finished", finished.Sub(calls[0].at))
	}
	if e := readState(t, cfg).Files["w0.1700000000000.pt.trace.json"]; e.Status != StatusPublished || e.Size != int64(want.Len()) {
		t.Errorf("state entry = %+v", e)
	}
}

func TestIncompleteIsRetried(t *testing.T) {
	cfg := testConfig(t)
	writeFile(t, filepath.Join(cfg.Dir, "a.json"), "{}")
	r := &recorder{dir: cfg.Dir, fn: func(_ context.Context, _ string, n int) error {
		if n < 3 {
			return fmt.Errorf("kineto: truncated at byte 2: %w", ErrIncomplete)
		}
		return nil
	}}
	logs := &logBuf{}
	if err := once(t, cfg, r, logs); err != nil {
		t.Fatal(err)
	}
	calls := r.snapshot()
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3", len(calls))
	}
	// Retries back off: never sooner than Settle after the previous try.
	for i := 1; i < len(calls); i++ {
		if gap := calls[i].at.Sub(calls[i-1].at); gap < cfg.Settle {
			t.Errorf("retry %d after %v, want >= %v", i, gap, cfg.Settle)
		}
	}
	e := readState(t, cfg).Files["a.json"]
	if e.Status != StatusPublished || e.Attempts != 3 {
		t.Errorf("state entry = %+v", e)
	}
	if !logs.contains("a.json is still incomplete; retrying") {
		t.Errorf("no retry logged:\n%s", logs)
	}
}

func TestRestartPublishesNothingAgain(t *testing.T) {
	cfg := testConfig(t)
	for _, n := range []string{"a.json", "b.json.gz", "c.pt.trace.json"} {
		writeFile(t, filepath.Join(cfg.Dir, n), n)
	}
	first := &recorder{dir: cfg.Dir}
	if err := once(t, cfg, first, nil); err != nil {
		t.Fatal(err)
	}
	if len(first.snapshot()) != 3 {
		t.Fatalf("first run published %v", first.rels())
	}

	again := &recorder{dir: cfg.Dir}
	if err := once(t, cfg, again, nil); err != nil {
		t.Fatal(err)
	}
	logs := &logBuf{}
	stop := startRun(t, cfg, again, logs)
	time.Sleep(3 * cfg.Settle)
	if err, _ := stop(); err != nil {
		t.Fatal(err)
	}
	if got := again.rels(); len(got) != 0 {
		t.Errorf("restart republished %v", got)
	}
}

func TestModifiedFileIsPublishedAgain(t *testing.T) {
	cfg := testConfig(t)
	p := filepath.Join(cfg.Dir, "a.json")
	writeFile(t, p, "{}")
	r := &recorder{dir: cfg.Dir}
	if err := once(t, cfg, r, nil); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		modify func()
	}{
		{"content", func() { writeFile(t, p, `{"more":1}`) }},
		// Same size, new mtime: still a new version.
		{"mtime only", func() {
			future := time.Now().Add(time.Hour)
			if err := os.Chtimes(p, future, future); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(r.snapshot())
			tc.modify()
			logs := &logBuf{}
			if err := once(t, cfg, r, logs); err != nil {
				t.Fatal(err)
			}
			if n := len(r.snapshot()) - before; n != 1 {
				t.Fatalf("published %d times after modification, want 1", n)
			}
			if !logs.contains("a.json changed since it was recorded as published") {
				t.Errorf("change not logged:\n%s", logs)
			}
			st, _ := os.Stat(p)
			if e := readState(t, cfg).Files["a.json"]; e.MtimeNS != st.ModTime().UnixNano() || e.Size != st.Size() {
				t.Errorf("state not updated to the new version: %+v", e)
			}
		})
	}
}

func TestOnlyMatchingFilesArePublished(t *testing.T) {
	files := []string{
		"w0.1700000000000.pt.trace.json", "w1.1700000000001.pt.trace.json.gz", "snap.JSON",
		"notes.txt", "snap.pickle", ".hidden.json", "part.json.tmp", "sub/deep.json",
		// The state's own temporaries, as a crash mid-save would leave them.
		".trainscope-watch.json.123.tmp",
	}
	for _, tc := range []struct {
		name  string
		match func(string) bool
		want  []string
	}{
		{"default", nil, []string{"snap.JSON", "w0.1700000000000.pt.trace.json", "w1.1700000000001.pt.trace.json.gz"}},
		// Even a match-everything Match never sees the state file.
		{"everything", func(string) bool { return true }, []string{
			".hidden.json", "notes.txt", "part.json.tmp", "snap.JSON", "snap.pickle",
			"w0.1700000000000.pt.trace.json", "w1.1700000000001.pt.trace.json.gz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Match = tc.match
			for _, n := range files {
				writeFile(t, filepath.Join(cfg.Dir, n), "{}")
			}
			r := &recorder{dir: cfg.Dir}
			if err := once(t, cfg, r, nil); err != nil {
				t.Fatal(err)
			}
			got := r.rels()
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("published %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRecursive(t *testing.T) {
	cfg := testConfig(t)
	cfg.Recursive = true
	for _, n := range []string{"a.json", "rank0/b.json", "rank1/deep/c.json.gz", ".cache/d.json"} {
		writeFile(t, filepath.Join(cfg.Dir, n), "{}")
	}
	r := &recorder{dir: cfg.Dir}
	if err := once(t, cfg, r, nil); err != nil {
		t.Fatal(err)
	}
	got := r.rels()
	slices.Sort(got)
	if want := []string{"a.json", "rank0/b.json", "rank1/deep/c.json.gz"}; !slices.Equal(got, want) {
		t.Errorf("published %q, want %q", got, want)
	}
	if _, ok := readState(t, cfg).Files["rank1/deep/c.json.gz"]; !ok {
		t.Error("state lacks the nested file under its slash path")
	}
}

func TestOldestFirst(t *testing.T) {
	cfg := testConfig(t)
	base := time.Now().Add(-time.Hour)
	order := []string{"c.json", "a.json", "b.json"} // mtime order, not name order
	for i, n := range order {
		p := filepath.Join(cfg.Dir, n)
		writeFile(t, p, "{}")
		at := base.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	r := &recorder{dir: cfg.Dir}
	if err := once(t, cfg, r, nil); err != nil {
		t.Fatal(err)
	}
	if got := r.rels(); !slices.Equal(got, order) {
		t.Errorf("published in order %q, want %q", got, order)
	}
}

func TestPublisherSeesFileID(t *testing.T) {
	cfg := testConfig(t)
	p := filepath.Join(cfg.Dir, "a.json")
	writeFile(t, p, "{}")
	r := &recorder{dir: cfg.Dir}
	if err := once(t, cfg, r, nil); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	f := r.snapshot()[0].file
	want := FileID(cfg.Dir, p, st.Size(), st.ModTime().UnixNano())
	if f.ID != want || f.Rel != "a.json" || f.Path != p || f.Size != 2 {
		t.Errorf("FileOf = %+v, want id %s", f, want)
	}
	if e := readState(t, cfg).Files["a.json"]; e.ID != want {
		t.Errorf("state id %s, want %s", e.ID, want)
	}
}

func TestPrunesVanishedFiles(t *testing.T) {
	cfg := testConfig(t)
	writeFile(t, filepath.Join(cfg.Dir, "a.json"), "{}")
	writeFile(t, filepath.Join(cfg.Dir, "b.json"), "{}")
	r := &recorder{dir: cfg.Dir}
	if err := once(t, cfg, r, nil); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(cfg.Dir, "a.json"))
	if err := once(t, cfg, r, nil); err != nil {
		t.Fatal(err)
	}
	files := readState(t, cfg).Files
	if _, ok := files["a.json"]; ok || len(files) != 1 {
		t.Errorf("state after deleting a.json: %v", files)
	}
}
