package corpus

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Root is the repository's own corpus folder, testdata/corpus, found by
// walking up from the working folder to go.mod; "" when not found.
func Root() string {
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				root = filepath.Join(dir, "testdata", "corpus")
				return
			}
			up := filepath.Dir(dir)
			if up == dir {
				return
			}
			dir = up
		}
	})
	return root
}

var (
	rootOnce sync.Once
	root     string
)

// External is a full copy of the corpus beside the repository: the folder
// TRAINSCOPE_CORPUS names (TRAINSCOPE_CORPUS=none: no external corpus,
// as in a fresh clone), else ../shared/corpus next to the repository's
// root when it is there; "" when neither is.
func External() string {
	if d := os.Getenv("TRAINSCOPE_CORPUS"); d != "" {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
		return ""
	}
	if r := Root(); r != "" {
		d := filepath.Join(r, "..", "..", "..", "shared", "corpus")
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return filepath.Clean(d)
		}
	}
	return ""
}

// Path is the corpus file rel ("kineto/hta/x.json.gz", slash-separated):
// the repository's copy, unpacked when stored gzipped, else the external
// corpus's. When neither has it the test is skipped with a line that says
// which file is missing and how to get it.
func Path(t testing.TB, rel string) string {
	t.Helper()
	p, err := find(rel)
	if err != nil {
		record("error", rel)
		t.Fatalf("corpus %s: %v", rel, err)
	}
	if p == "" {
		record("skip", rel)
		t.Skipf("needs corpus file %s, which is not in this repository's testdata/corpus (too large): set TRAINSCOPE_CORPUS to a full copy of the corpus to run this check", rel)
	}
	record("ran", rel)
	return p
}

// Has says whether the corpus file rel can be had, without skipping.
func Has(rel string) bool {
	p, err := find(rel)
	return err == nil && p != ""
}

// Dir is the corpus folder rel (such as "scripts/relax/scripts"), from the
// repository, else the external corpus; the test is skipped, with a line
// saying so, when neither has it.
func Dir(t testing.TB, rel string) string {
	t.Helper()
	for _, base := range []string{Root(), External()} {
		if base == "" {
			continue
		}
		d := filepath.Join(base, filepath.FromSlash(rel))
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			record("ran", rel+"/")
			return d
		}
	}
	record("skip", rel+"/")
	t.Skipf("needs corpus folder %s, which is not in this repository's testdata/corpus", rel)
	return ""
}

// Glob is every corpus file whose slash-separated path matches pattern
// (filepath.Match syntax, such as "kineto/*/*.json*"), each once: the
// repository's copies (unpacked when stored gzipped) and the external
// corpus's files the repository lacks. It logs how many matching files
// only the external corpus would have when that is not here.
func Glob(t testing.TB, pattern string) []string {
	t.Helper()
	rels := map[string]bool{}
	add := func(base string, stored bool) {
		if base == "" {
			return
		}
		for _, pat := range []string{pattern, pattern + ".gz"} {
			m, _ := filepath.Glob(filepath.Join(base, filepath.FromSlash(pat)))
			for _, p := range m {
				rel, err := filepath.Rel(base, p)
				if err != nil {
					continue
				}
				rel = filepath.ToSlash(rel)
				if pat != pattern {
					// a name.gz only stands for name when name does not
					// itself match (x.json.gz matches "*.json*" already)
					if ok, _ := filepath.Match(pattern, strings.TrimSuffix(rel, ".gz")); !ok || !stored || unpacked(rel) == "" {
						continue
					}
					rel = strings.TrimSuffix(rel, ".gz")
				}
				if st, err := os.Stat(p); err == nil && !st.IsDir() {
					rels[rel] = true
				}
			}
		}
	}
	add(Root(), true)
	inRepo := len(rels)
	add(External(), false)
	var out []string
	for _, rel := range slices.Sorted(maps.Keys(rels)) {
		p, err := find(rel)
		if err != nil {
			t.Fatalf("corpus %s: %v", rel, err)
		}
		if p != "" {
			record("ran", rel)
			out = append(out, p)
		}
	}
	if External() == "" {
		if n := leftOut(pattern); n > 0 {
			record("skip", pattern)
			t.Logf("corpus: %d file(s) matching %s are not in this repository (too large); set TRAINSCOPE_CORPUS to a full copy to check them too", n, pattern)
		}
	} else if extra := len(rels) - inRepo; extra > 0 {
		t.Logf("corpus: %d file(s) matching %s read from %s", extra, pattern, External())
	}
	return out
}

// LeftOut are the corpus files deliberately not copied into the
// repository (see testdata/corpus/README.md).
var LeftOut = []string{
	"kineto/hta/tests__data__df_index_resolver__df_index_resolver.json.gz",
	"kineto/hta/tests__data__trace_diff__control__control.json.gz",
	"kineto/hta/tests__data__trace_diff__test__test.json.gz",
}

func leftOut(pattern string) int {
	n := 0
	for _, rel := range LeftOut {
		if ok, _ := filepath.Match(pattern, rel); ok {
			n++
		}
	}
	return n
}

// unpacked is the name a stored rel.gz stands for when rel is not itself
// a .gz ("" otherwise).
func unpacked(rel string) string {
	name := strings.TrimSuffix(rel, ".gz")
	if name == rel || strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".raw") {
		// x.json.gz and x.raw.gz are the corpus's own gzipped files
		return ""
	}
	return name
}

// find is where rel can be read: "" when nowhere.
func find(rel string) (string, error) {
	if r := Root(); r != "" {
		p := filepath.Join(r, filepath.FromSlash(rel))
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if gz := p + ".gz"; unpacked(rel+".gz") != "" {
			if _, err := os.Stat(gz); err == nil {
				return unpack(gz, rel)
			}
		}
	}
	if e := External(); e != "" {
		p := filepath.Join(e, filepath.FromSlash(rel))
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", nil
}

var unpackMu sync.Mutex

// unpack writes the gzipped file gz, unpacked, to a cache folder under the
// system's temp folder named by its content (one per version of the
// file), and returns the unpacked file; the cache is shared by test
// binaries, so the file is written beside its name and renamed.
func unpack(gz, rel string) (string, error) {
	unpackMu.Lock()
	defer unpackMu.Unlock()
	raw, err := os.ReadFile(gz)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	dst := filepath.Join(os.TempDir(), "trainscope-corpus", hex.EncodeToString(sum[:8]), filepath.Base(rel))
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return "", fmt.Errorf("%s: %w", gz, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".unpack-*")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(tmp, zr)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("unpack %s: %w", gz, err)
	}
	return dst, nil
}

// record appends "what rel" to the file TRAINSCOPE_CORPUS_LOG names, if
// any: make test counts the corpus checks that ran and were skipped.
func record(what, rel string) {
	path := os.Getenv("TRAINSCOPE_CORPUS_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s %s\n", what, rel)
	f.Close()
}
