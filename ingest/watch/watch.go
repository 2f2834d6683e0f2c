package watch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// ErrIncomplete is what a Publisher returns when the file turned out to be
// still partial (the agent maps the reader's truncation error to it). The
// watcher retries the file later instead of treating it as broken, because
// a writer may pause longer than Settle mid-file.
var ErrIncomplete = errors.New("file is still incomplete")

// Publisher publishes one file that looks complete. It must honour ctx and
// be idempotent per file version (see FileID): after a crash between a
// successful publish and the state write, the same version comes again.
// It may return ErrIncomplete (retry later), another error (retry with
// backoff until Config.GiveUp, then recorded as failed) or nil (recorded
// as published).
type Publisher func(ctx context.Context, path string) error

// File is the version of a file being published, as the watcher saw it.
type File struct {
	Path    string // Dir joined with Rel: the path the Publisher receives
	Rel     string // relative to Dir, slash-separated: the state's key
	Size    int64
	MtimeNS int64
	ID      string // FileID of this version
}

type fileKey struct{}

// FileOf returns the file a Publisher was called for. The publisher should
// take the id from here rather than stat the file again, so the id matches
// the version the state records even if the file changes meanwhile.
func FileOf(ctx context.Context) (File, bool) {
	f, ok := ctx.Value(fileKey{}).(File)
	return f, ok
}

// Run watches cfg.Dir until ctx is cancelled, then returns nil. It returns
// an error only for what retrying cannot fix: a bad config, an unusable
// state file, or a Dir that is not a folder. A missing Dir is waited for.
func Run(ctx context.Context, cfg Config, publish Publisher, logf func(format string, args ...any)) error {
	w, err := newWatcher(cfg, publish, logf, false)
	if err != nil {
		return err
	}
	timer := time.NewTimer(0) // first pass at once, then every Poll
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			if w.dirty {
				w.flush() // a save failed earlier; a last try, logged if it fails
			}
			return nil
		case <-timer.C:
		}
		if _, err := w.poll(ctx); err != nil {
			return err
		}
		timer.Reset(w.cfg.Poll)
	}
}

// Once processes what is in cfg.Dir and returns: it polls until every
// matching file has been published or recorded as failed, so it waits for
// files still being written (bound it with ctx). It returns ctx.Err() if
// cancelled first, an error naming the files recorded as failed during this
// call, or nil. Unlike Run, a missing or unreadable Dir is an error.
func Once(ctx context.Context, cfg Config, publish Publisher, logf func(format string, args ...any)) error {
	w, err := newWatcher(cfg, publish, logf, true)
	if err != nil {
		return err
	}
	for {
		pending, err := w.poll(ctx)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if pending == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(w.cfg.Poll):
		}
	}
	if w.dirty {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if len(w.failed) > 0 {
		return fmt.Errorf("%d file(s) in %s failed:\n%w", len(w.failed), w.cfg.Dir, errors.Join(w.failed...))
	}
	return nil
}

// tracked is the in-memory view of one file present in Dir: its current
// version and, while unhandled, its retry schedule. Nothing here is
// persisted; only outcomes are.
type tracked struct {
	size, mtime int64
	gen         uint64    // poll pass that last saw it, for pruning
	seen        time.Time // when this version was first observed
	firstTry    time.Time // first publish attempt on this version; zero before
	next        time.Time // earliest next attempt
	tries       int
	done        bool // this version is recorded (published or failed)
}

type observation struct {
	rel         string
	size, mtime int64
}

type watcher struct {
	cfg     Config
	publish Publisher
	logf    func(string, ...any)
	once    bool

	st        *state
	dirty     bool // st has changes not yet saved (a save failed)
	statePath string
	stateRel  string // state file relative to Dir, "" when outside it
	tmpPrefix string // base-name prefix of the state's temporaries

	files map[string]*tracked
	gen   uint64
	obs   []observation // scan buffer, reused so idle polls allocate little
	ready []string      // likewise

	waiting  bool   // logged that Dir is missing
	lastScan string // last logged scan problems, to log each change once
	lastSave string // likewise for state save failures
	failed   []error
}

func newWatcher(cfg Config, publish Publisher, logf func(string, ...any), once bool) (*watcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if publish == nil {
		return nil, errors.New("watch: nil Publisher")
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	cfg = cfg.withDefaults()
	w := &watcher{cfg: cfg, publish: publish, logf: logf, once: once, files: map[string]*tracked{}}
	w.statePath = cfg.StatePath
	if rel := relPath(cfg.Dir, cfg.StatePath); !path.IsAbs(rel) && !strings.HasPrefix(rel, "../") {
		w.stateRel = rel
	}
	w.tmpPrefix = tempPrefix(cfg.StatePath)

	// The state's folder is often Dir itself, which the profiler creates
	// only on its first trace; creating it is what the profiler would do.
	if err := os.MkdirAll(filepath.Dir(w.statePath), 0o755); err != nil {
		return nil, fmt.Errorf("watch.state_path: %w", err)
	}
	removeStaleTemps(w.statePath)
	st, err := loadState(w.statePath)
	if err != nil {
		return nil, err
	}
	absDir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("watch.dir: %w", err)
	}
	if st.Dir != "" && st.Dir != absDir {
		logf("state %s was written for %s, now watching %s; its entries are matched by path relative to the folder", w.statePath, st.Dir, absDir)
	}
	st.Dir = absDir
	w.st = st
	// Save now so an unwritable state location fails at start, not after
	// the first publish (when every restart would republish).
	if err := st.save(w.statePath); err != nil {
		return nil, fmt.Errorf("watch state %s: cannot write: %w", w.statePath, err)
	}
	logf("watching %s (state %s, %d file(s) recorded)", cfg.Dir, w.statePath, len(st.Files))
	return w, nil
}

// excluded reports the state file and its temporaries, which must never be
// published whatever Match says.
func (w *watcher) excluded(rel string) bool {
	if w.stateRel == "" {
		return false
	}
	if rel == w.stateRel {
		return true
	}
	return path.Dir(rel) == path.Dir(w.stateRel) &&
		strings.HasPrefix(path.Base(rel), w.tmpPrefix) && strings.HasSuffix(rel, ".tmp")
}

// errNotFolder marks a Dir that exists but is not a folder: retrying cannot
// help, so Run returns it.
var errNotFolder = errors.New("not a folder")

// scan lists the matching regular files under Dir into w.obs. complete is
// false when part of the tree could not be read, so pruning must wait: an
// unreadable entry is not a deleted one.
func (w *watcher) scan() (complete bool, problems []string, err error) {
	w.obs = w.obs[:0]
	complete = true
	var walk func(relDir, absDir string) error
	walk = func(relDir, absDir string) error {
		f, err := os.Open(absDir)
		if err != nil {
			return err
		}
		// File.ReadDir rather than os.ReadDir: the latter sorts, and the
		// order here doesn't matter (ready files are sorted by mtime).
		ents, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return err
		}
		for _, e := range ents {
			name := e.Name()
			rel := name
			if relDir != "" {
				rel = relDir + "/" + name
			}
			typ := e.Type()
			if typ.IsDir() {
				if !w.cfg.Recursive || strings.HasPrefix(name, ".") {
					continue
				}
				if err := walk(rel, filepath.Join(absDir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					problems = append(problems, fmt.Sprintf("%s: %v", rel, err))
					complete = false
				}
				continue
			}
			if w.excluded(rel) || !w.cfg.Match(rel) {
				continue
			}
			var info fs.FileInfo
			switch {
			case typ.IsRegular():
				info, err = e.Info()
			case typ&fs.ModeSymlink != 0:
				info, err = os.Stat(filepath.Join(absDir, name))
			default:
				continue // pipes, sockets, devices
			}
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) { // deleted since listed: just gone
					problems = append(problems, fmt.Sprintf("%s: %v", rel, err))
					complete = false
				}
				continue
			}
			if !info.Mode().IsRegular() {
				continue
			}
			w.obs = append(w.obs, observation{rel: rel, size: info.Size(), mtime: info.ModTime().UnixNano()})
		}
		return nil
	}
	if err := walk("", w.cfg.Dir); err != nil {
		if st, serr := os.Stat(w.cfg.Dir); serr == nil && !st.IsDir() {
			return false, nil, fmt.Errorf("watch.dir %s: %w", w.cfg.Dir, errNotFolder)
		}
		return false, nil, fmt.Errorf("watch.dir %s: %w", w.cfg.Dir, err)
	}
	return complete, problems, nil
}

// poll is one pass: scan, update what is tracked, prune, then publish the
// files that are ready, oldest first. It returns how many files are still
// unhandled, and an error only for what Run or Once must stop on.
func (w *watcher) poll(ctx context.Context) (pending int, err error) {
	now := time.Now()
	complete, problems, err := w.scan()
	if err != nil {
		if w.once || errors.Is(err, errNotFolder) {
			return 0, err
		}
		if errors.Is(err, fs.ErrNotExist) {
			if !w.waiting {
				w.logf("%s does not exist yet; waiting for it to appear", w.cfg.Dir)
				w.waiting = true
			}
			return 0, nil
		}
		// Permissions or I/O: may be fixed without restarting the agent.
		problems = []string{err.Error()}
	} else if w.waiting {
		w.logf("%s appeared", w.cfg.Dir)
		w.waiting = false
	}
	if msg := strings.Join(problems, "; "); msg != w.lastScan {
		if msg != "" {
			w.logf("cannot read part of %s, retrying every poll: %s", w.cfg.Dir, msg)
		}
		w.lastScan = msg
	}
	if err != nil {
		return len(w.files), nil // nothing listed: keep what is tracked as is
	}

	w.gen++
	for _, o := range w.obs {
		t := w.files[o.rel]
		if t == nil || t.size != o.size || t.mtime != o.mtime {
			t = w.newVersion(o, t, now)
			w.files[o.rel] = t
		}
		t.gen = w.gen
	}
	for rel, t := range w.files {
		if t.gen != w.gen {
			delete(w.files, rel)
		}
	}
	// Prune records of files that are gone, so the state stays as small as
	// the folder. Only after a complete listing: a file we could not see
	// is not a deleted one, and dropping its record would republish it.
	if complete {
		for rel := range w.st.Files {
			if _, ok := w.files[rel]; !ok {
				delete(w.st.Files, rel)
				w.dirty = true
			}
		}
	}

	w.ready = w.ready[:0]
	for rel, t := range w.files {
		if t.done {
			continue
		}
		pending++
		if now.Sub(t.seen) >= w.cfg.Settle && !now.Before(t.next) {
			w.ready = append(w.ready, rel)
		}
	}
	slices.SortFunc(w.ready, func(a, b string) int {
		ta, tb := w.files[a], w.files[b]
		if ta.mtime != tb.mtime {
			return cmp.Compare(ta.mtime, tb.mtime)
		}
		return strings.Compare(a, b)
	})
	for _, rel := range w.ready {
		if ctx.Err() != nil {
			break
		}
		t := w.files[rel]
		w.attempt(ctx, rel, t)
		if t.done {
			pending--
		}
	}
	if w.dirty {
		w.flush()
	}
	return pending, nil
}

// newVersion starts tracking a version of rel not seen before: first sight
// of the file, or a change since last poll. A version the state already
// records is done; one that differs from its record is new, and the log says
// so once (not on every chunk of a rewrite).
func (w *watcher) newVersion(o observation, prev *tracked, now time.Time) *tracked {
	t := &tracked{size: o.size, mtime: o.mtime, seen: now}
	e, ok := w.st.Files[o.rel]
	if !ok {
		return t
	}
	if e.Size == o.size && e.MtimeNS == o.mtime {
		t.done = true
		return t
	}
	if prev == nil || prev.done {
		w.logf("%s changed since it was recorded as %s (size %d -> %d, mtime %s -> %s); treating it as a new file",
			o.rel, e.Status, e.Size, o.size, fmtNS(e.MtimeNS), fmtNS(o.mtime))
	}
	return t
}

func fmtNS(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// attempt publishes one ready file and records or schedules the outcome.
func (w *watcher) attempt(ctx context.Context, rel string, t *tracked) {
	abs := filepath.Join(w.cfg.Dir, filepath.FromSlash(rel))
	// Re-check just before publishing: earlier publishes in this pass may
	// have taken long enough for the file to change.
	info, err := os.Stat(abs)
	if err != nil {
		return // gone or unreadable: the next scan decides
	}
	if info.Size() != t.size || info.ModTime().UnixNano() != t.mtime {
		gen := t.gen
		*t = *w.newVersion(observation{rel, info.Size(), info.ModTime().UnixNano()}, t, time.Now())
		t.gen = gen
		return
	}
	start := time.Now()
	if t.firstTry.IsZero() {
		t.firstTry = start
	}
	t.tries++
	f := File{Path: abs, Rel: rel, Size: t.size, MtimeNS: t.mtime, ID: fileID(rel, t.size, t.mtime)}
	err = w.call(ctx, f)
	if err == nil {
		w.logf("published %s (%d bytes, id %.12s, %v)", rel, f.Size, f.ID, time.Since(start).Round(time.Millisecond))
		w.record(f, t, StatusPublished, nil)
		return
	}
	if ctx.Err() != nil {
		// Shutting down: the error is the cancellation, not the file's
		// fault, so record nothing and let the next start retry it.
		t.tries--
		return
	}
	now := time.Now()
	if now.Sub(t.firstTry) >= w.cfg.GiveUp {
		w.logf("giving up on %s after %v and %d attempt(s): %v; recorded as failed (it is retried only if it changes)",
			rel, now.Sub(t.firstTry).Round(time.Millisecond), t.tries, err)
		w.record(f, t, StatusFailed, err)
		if w.once { // only Once reports them; Run must not grow without bound
			w.failed = append(w.failed, fmt.Errorf("%s: %w", rel, err))
		}
		return
	}
	// Back off, but always make one last attempt at the GiveUp deadline so
	// a file is never failed on an attempt made long before it.
	t.next = now.Add(w.backoff(t.tries))
	if deadline := t.firstTry.Add(w.cfg.GiveUp); t.next.After(deadline) {
		t.next = deadline
	}
	wait := t.next.Sub(now).Round(time.Millisecond)
	if errors.Is(err, ErrIncomplete) {
		w.logf("%s is still incomplete; retrying in %v", rel, wait)
	} else {
		w.logf("publish %s (attempt %d): %v; retrying in %v", rel, t.tries, err, wait)
	}
}

// backoff is Settle doubled per failed attempt, capped at a minute (or a
// quarter of GiveUp, so short GiveUps still get several attempts).
func (w *watcher) backoff(tries int) time.Duration {
	limit := max(min(time.Minute, w.cfg.GiveUp/4), w.cfg.Settle)
	d := w.cfg.Settle
	for i := 1; i < tries && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// call runs the publisher, turning a panic into an error: a file that
// crashes the reader would otherwise crash the agent on every restart.
func (w *watcher) call(ctx context.Context, f File) (err error) {
	defer func() {
		if r := recover(); r != nil {
			w.logf("publisher panicked on %s: %v\n%s", f.Rel, r, debug.Stack())
			err = fmt.Errorf("publisher panicked: %v", r)
		}
	}()
	return w.publish(context.WithValue(ctx, fileKey{}, f), f.Path)
}

// record stores the outcome for this version and saves the state at once.
func (w *watcher) record(f File, t *tracked, status Status, err error) {
	e := Entry{Size: f.Size, MtimeNS: f.MtimeNS, Status: status, Time: time.Now().UTC(), ID: f.ID, Attempts: t.tries}
	if err != nil {
		e.Error = err.Error()
	}
	w.st.Files[f.Rel] = e
	t.done = true
	w.dirty = true
	w.flush()
}

// flush saves the state. A failure (disk full, say) is logged once per
// distinct error and retried on every poll; the outcomes stay in memory, so
// this process does not republish meanwhile.
func (w *watcher) flush() error {
	if err := w.st.save(w.statePath); err != nil {
		if msg := err.Error(); msg != w.lastSave {
			w.logf("cannot save state %s (retrying every poll; a restart before it succeeds republishes): %v", w.statePath, err)
			w.lastSave = msg
		}
		return fmt.Errorf("watch state %s: %w", w.statePath, err)
	}
	w.dirty = false
	w.lastSave = ""
	return nil
}
