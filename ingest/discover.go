package ingest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

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
// has no duplicates.
func Discover(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no input: give trace files or folders")
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			// a CSV among traces is taken when it is an Nsight Compute
			// export; other tables a folder holds are not ours
			if traceLike(d.Name()) || IsNCU(path) {
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

// LargestJSON is the largest uncompressed size among files, as far as a
// file says (a gzip file's trailer, bounded; jsonscan.JSONSize): how big
// the biggest single trace of a load is before it is read. Files that
// cannot be opened count nothing (reading them reports the error).
func LargestJSON(files []string) int64 {
	var largest int64
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if st, err := f.Stat(); err == nil && !st.IsDir() {
			largest = max(largest, jsonscan.JSONSize(f, st.Size()))
		}
		f.Close()
	}
	return largest
}
