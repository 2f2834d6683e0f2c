package ingest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/trainscope/trainscope/ingest/jsonscan"
)

// traceLike reports whether a file name looks like an artifact the readers
// take (or one they refuse with a useful error, like a pickle).
func traceLike(name string) bool {
	low := strings.ToLower(name)
	for _, suf := range []string{".json", ".json.gz", ".pickle", ".pkl", ".raw.gz", ".sqlite", ".prom"} {
		if strings.HasSuffix(low, suf) {
			return true
		}
	}
	return false
}

// Discover expands the paths a user gave: files are taken as they are,
// folders are walked for trace-like files (*.json, *.json.gz, and *.pickle
// or *.pkl so that those get their explanation). The result is sorted and
// has no duplicates. It is DiscoverWith without a warning line for what it
// skips.
func Discover(paths []string) ([]string, error) {
	return DiscoverWith(paths, nil)
}

// DiscoverWith is Discover, telling warn (nil: no one) of each entry of a
// folder it skips although its name looks like a trace: a named pipe,
// socket or device (a reader would wait on a pipe forever), or a link to a
// folder (links are not followed into folders, so a link loop cannot make
// the walk endless; a folder the user names through a link is walked).
// Nothing but regular files (or links to them) is ever opened: a path
// given that is not a regular file or a folder is an error
// naming it. A link in a folder that leads nowhere (a loop, a dangling
// link) is kept: reading it fails with an InputError naming it, or records
// it as skipped with Options.SkipBad.
func DiscoverWith(paths []string, warn func(string)) ([]string, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no input: give trace files or folders")
	}
	say := func(format string, a ...any) {
		if warn != nil {
			warn(fmt.Sprintf(format, a...))
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, statProblem(p, err)
		}
		if !st.IsDir() {
			if !st.Mode().IsRegular() {
				return nil, fmt.Errorf("%s: %s, not a regular file: give trace files or folders", p, fileKind(st.Mode()))
			}
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			continue
		}
		// A folder given through a link (bench/syn8 -> /data/run7) is
		// walked as the folder it names: WalkDir takes a link at its
		// root for a file, which found nothing in it. Links inside the
		// folder are still not followed into folders.
		root := p
		if li, err := os.Lstat(p); err == nil && li.Mode()&fs.ModeSymlink != 0 {
			root = p + string(filepath.Separator)
		}
		var found []string
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			name := d.Name()
			// a CSV among traces is taken when it is an Nsight Compute
			// export; other tables a folder holds are not ours
			if !traceLike(name) && !strings.EqualFold(filepath.Ext(name), ".csv") {
				return nil
			}
			typ := d.Type()
			if typ&fs.ModeSymlink != 0 {
				ti, err := os.Stat(path)
				switch {
				case err != nil:
					if traceLike(name) { // the reader names the loop or the missing target
						found = append(found, path)
					} else {
						say("skipping %s: %s", path, statWhy(path, err))
					}
					return nil
				case ti.IsDir():
					say("skipping %s: a link to a folder (links are not followed into folders; give the folder itself)", path)
					return nil
				}
				typ = ti.Mode().Type()
			}
			if !typ.IsRegular() {
				say("skipping %s: %s, not a regular file", path, fileKind(typ))
				return nil
			}
			if traceLike(name) || IsNCU(path) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no traces in this folder (looked for *.json, *.json.gz, *.pt.trace.json[.gz], *.sqlite, *.prom, and Nsight Compute *.csv exports)", p)
		}
		sort.Strings(found)
		for _, f := range found {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// fileKind names a file type that is not a regular file.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}

// statProblem is a stat error of path as one line naming it once: a link
// loop says so.
func statProblem(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("%s: a loop of symbolic links (%w)", path, err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// statWhy is statProblem without the path, for a line that names it.
func statWhy(path string, err error) string {
	return strings.TrimPrefix(statProblem(path, err).Error(), path+": ")
}

// checkRegular refuses, before anything opens it, a path that is not a
// regular file (or a link to one): a named pipe would block its reader
// forever, a folder or a link loop cannot be read. The error is an
// InputError naming the path.
func checkRegular(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return &InputError{statProblem(path, err)}
	}
	if !st.Mode().IsRegular() {
		return &InputError{fmt.Errorf("%s: %s, not a regular file", path, fileKind(st.Mode()))}
	}
	return nil
}

// LargestJSON is the largest uncompressed size among files, as far as a
// file says (a gzip file's trailer, bounded; jsonscan.JSONSize): how big
// the biggest single trace of a load is before it is read. Files that
// cannot be opened, or are not regular files, count nothing (reading them
// reports the error).
func LargestJSON(files []string) int64 {
	var largest int64
	for _, p := range files {
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			continue // never open a pipe: it would wait for a writer
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			largest = max(largest, jsonscan.JSONSize(f, st.Size()))
		}
		f.Close()
	}
	return largest
}
