package watch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// stateVersion is bumped on any incompatible change to the state format; a
// file with another version is refused rather than misread.
const stateVersion = 1

// Status is what happened to a recorded file version.
type Status string

const (
	StatusPublished Status = "published"
	StatusFailed    Status = "failed"
)

// Entry records one handled file version in the state file.
type Entry struct {
	Size     int64     `json:"size"`
	MtimeNS  int64     `json:"mtime_ns"`
	Status   Status    `json:"status"`
	Error    string    `json:"error,omitempty"`
	Time     time.Time `json:"time"`
	ID       string    `json:"id"`
	Attempts int       `json:"attempts"`
}

// state is the on-disk document. Files is keyed by the path relative to
// Dir, slash-separated; encoding/json writes map keys sorted, so the file
// is stable and diffable.
type state struct {
	Version int              `json:"version"`
	Dir     string           `json:"dir"`
	Files   map[string]Entry `json:"files"`
}

// StateError is a state file that cannot be used. It is never papered over:
// starting from empty would republish every file in the folder.
type StateError struct {
	Path string
	Err  error
}

func (e *StateError) Error() string {
	return fmt.Sprintf("watch state %s is corrupt: %v. To recover, move it away (mv %q %q) and restart: "+
		"every file in the folder is then published again, and the ingest drops the duplicates by their FileID",
		e.Path, e.Err, e.Path, e.Path+".corrupt")
}

func (e *StateError) Unwrap() error { return e.Err }

// loadState reads the state at p; a missing file is an empty state.
func loadState(p string) (*state, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return &state{Version: stateVersion, Files: map[string]Entry{}}, nil
	}
	if err != nil {
		// Unreadable is not corrupt: permissions or I/O, which the user
		// fixes in place, so don't suggest moving the file.
		return nil, fmt.Errorf("watch state %s: %w", p, err)
	}
	var s state
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		if len(bytes.TrimSpace(data)) == 0 {
			err = errors.New("the file is empty")
		}
		return nil, &StateError{Path: p, Err: err}
	}
	if dec.More() {
		return nil, &StateError{Path: p, Err: fmt.Errorf("unexpected data after the JSON object at byte %d", dec.InputOffset())}
	}
	if s.Version != stateVersion {
		return nil, &StateError{Path: p, Err: fmt.Errorf("version %d, this trainscope reads version %d", s.Version, stateVersion)}
	}
	if s.Files == nil {
		s.Files = map[string]Entry{}
	}
	for rel, e := range s.Files {
		if rel == "" || path.IsAbs(rel) || rel != path.Clean(rel) || strings.HasPrefix(rel, "../") || rel == ".." {
			return nil, &StateError{Path: p, Err: fmt.Errorf("file key %q is not a clean relative path", rel)}
		}
		if e.Status != StatusPublished && e.Status != StatusFailed {
			return nil, &StateError{Path: p, Err: fmt.Errorf("file %q has status %q, want %q or %q", rel, e.Status, StatusPublished, StatusFailed)}
		}
	}
	return &s, nil
}

// save writes s to p atomically: a reader (or a crash) sees the old file or
// the new one, never a torn one.
func (s *state) save(p string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(p, append(data, '\n'))
}

// tempPattern names the state's temporaries: dot-prefixed and *.tmp, so the
// default Match skips them twice over, and isStateFile recognises them for
// custom matchers.
func tempPattern(statePath string) string {
	return tempPrefix(statePath) + "*.tmp"
}

func tempPrefix(statePath string) string {
	base := filepath.Base(statePath)
	if !strings.HasPrefix(base, ".") {
		base = "." + base
	}
	return base + "."
}

func writeFileAtomic(p string, data []byte) (err error) {
	dir := filepath.Dir(p)
	f, err := os.CreateTemp(dir, tempPattern(p))
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; the state holds nothing secret and
	// operators read it to see what the agent did.
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	// fsync before rename: otherwise a power loss can leave the new name
	// pointing at empty data, which loadState would rightly call corrupt.
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, p); err != nil {
		return err
	}
	// Make the rename itself durable. Not every platform can fsync a
	// folder, and the data is already safe, so failure here is ignored.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// removeStaleTemps deletes temporaries a crash left behind mid-save, so they
// don't accumulate across restarts.
func removeStaleTemps(statePath string) {
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(statePath), tempPattern(statePath)))
	for _, m := range matches {
		os.Remove(m)
	}
}

// FileID is a stable id for one version of a file: the hex SHA-256 of its
// path relative to dir (slash-separated, so the same on every platform and
// for both absolute and relative spellings), its size and its mtime in
// nanoseconds. The publisher uses it as the message id so a republish after
// a crash is deduplicated. It is unique within one watched folder; qualify
// it with the run id when folders of several runs share a stream.
func FileID(dir, p string, size, mtimeNS int64) string {
	return fileID(relPath(dir, p), size, mtimeNS)
}

func fileID(rel string, size, mtimeNS int64) string {
	h := sha256.New()
	h.Write([]byte(rel))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, size, 10))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, mtimeNS, 10))
	return hex.EncodeToString(h.Sum(nil))
}

// relPath is p relative to dir, slash-separated; p itself (cleaned) when it
// does not lie under dir.
func relPath(dir, p string) string {
	if ad, err := filepath.Abs(dir); err == nil {
		if ap, err := filepath.Abs(p); err == nil {
			if rel, err := filepath.Rel(ad, ap); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return filepath.ToSlash(rel)
			}
		}
	}
	return filepath.ToSlash(filepath.Clean(p))
}
