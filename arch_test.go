package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// importRules are the arrows between our packages (README, "How it
// works"): the event model is a leaf, its NATS transport builds on it and
// on nothing else of ours, storage knows no detector, readers do not
// diagnose, detectors read the store and never the readers or the
// transport. Only the ingest pipeline and the commands import the
// transport. Each rule: a package folder prefix, and the prefixes of our
// packages its non-test files may import. Test files may import more (a
// scheduler test loads a trace with a reader). The plugin module checks
// its own rule (grafana-plugin/pkg/imports_test.go: nothing of the product
// outside tests, and no cgo).
var importRules = []struct {
	pkg     string
	allowed []string
}{
	{"stream", nil},
	{"stream/transport", []string{"stream"}},
	{"gpu", []string{"stream"}},
	{"sql/*", []string{"sql/*", "stream"}},
	{"ingest/*", []string{"ingest/*", "stream", "gpu"}}, // readers: no store, no detectors
	{"ingest", []string{"ingest/*", "stream", "stream/transport", "gpu", "sql/*"}},
	{"detectors/...", []string{"detectors/...", "sql/*", "gpu", "stream"}},
}

// matches says whether package path p (relative to the module) fits
// pattern: "x" is x alone, "x/*" its subpackages, "x/..." x and them.
func matches(p, pattern string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	if base, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

const module = "github.com/trainscope/trainscope/"

func TestImportRules(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == "grafana-plugin" || path == "bench" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		rule := -1
		for i, r := range importRules {
			if matches(dir, r.pkg) {
				rule = i
				break
			}
		}
		if rule < 0 {
			return nil // the commands and tools import what they wire
		}
		seen[importRules[rule].pkg] = true
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			ours, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			if !allowedImport(ours, importRules[rule].allowed) {
				t.Errorf("%s imports %s: package %s may import only %v of ours", path, ours, dir, importRules[rule].allowed)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range importRules {
		if !seen[r.pkg] {
			t.Errorf("no package matched the rule for %s: the folders moved, update importRules", r.pkg)
		}
	}
}

func allowedImport(p string, allowed []string) bool {
	for _, a := range allowed {
		if matches(p, a) {
			return true
		}
	}
	return false
}
