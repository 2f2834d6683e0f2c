package main

import (
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// importRules are the arrows between our packages (README, "How it
// works"): the event model is a leaf, its NATS transport builds on it and
// on nothing else of ours, storage knows no detector, readers do not
// diagnose, detectors read the store and never the readers or the
// transport. Only the ingest pipeline and the binary's wiring (the root
// and internal/) import the transport. Each rule: a package folder
// prefix, and the prefixes of our packages its non-test files may import.
// Test files may import more (a scheduler test loads a trace with a
// reader). The plugin module checks its own rule
// (grafana-plugin/pkg/imports_test.go: nothing of the product outside
// tests, and no cgo).
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
	// test support: builds traces and loads them with the readers; only
	// tests import it (testOnly below)
	{"detectors/internal/testkit", []string{"detectors/...", "ingest", "ingest/*", "sql/*", "gpu", "stream"}},
	// the report model and its renderers render the report they are
	// given: no store, no detectors
	{"detectors/report/html", []string{"detectors/report", "detectors/mdfmt", "gpu", "stream"}},
	{"detectors/report", []string{"detectors/mdfmt", "gpu", "stream"}},
	// the causes judge what they are given: no store, no detectors
	{"detectors/causes", []string{"detectors/report", "detectors/mdfmt", "gpu", "stream"}},
	{"detectors/...", []string{"detectors/...", "sql/*", "gpu", "stream"}},
	// the commands' conventions (flags, exit codes, signals) know only
	// the config
	{"internal/cli", []string{"internal/config"}},
	// the agent publishes and never diagnoses: no store, no detectors
	{"internal/agent", []string{"internal/cli", "internal/config", "ingest", "ingest/*", "stream", "stream/transport", "gpu"}},
	// the offline pipeline reads files into a store and runs the
	// detectors: no NATS transport
	{"internal/analyze", []string{"internal/cli", "internal/config", "ingest", "ingest/*", "sql/*", "detectors/...", "gpu", "stream"}},
	{"internal/query", []string{"internal/cli", "sql/*"}},
	// the rest of the binary's own wiring (config, the server's
	// composition) may import every package of ours; rootOnly says who
	// may import it
	{"internal/...", []string{"internal/...", "stream/...", "gpu", "sql/...", "ingest/...", "detectors/..."}},
}

// testOnly are our packages that only test files may import.
var testOnly = []string{"detectors/internal/testkit", "internal/ondemand/fakekineto"}

// rootOnly are the packages that only the root (the binary) imports: the
// server's composition and the commands' work (the offline pipeline, the
// query) are the binary's to start, whatever other wiring reads the
// config. internal/agent is not: a source of traces (an on-demand
// capture) implements its agent.Source.
var rootOnly = []string{"internal/server", "internal/analyze", "internal/query"}

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
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if ours, ok := strings.CutPrefix(p, module); ok && allowedImport(ours, testOnly) {
				t.Errorf("%s imports %s, which only tests may import", path, ours)
			}
		}
		rule := -1
		for i, r := range importRules {
			if matches(dir, r.pkg) {
				rule = i
				break
			}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			ours, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			if dir != "." && allowedImport(ours, rootOnly) {
				t.Errorf("%s imports %s: only the binary (the root package) imports %v", path, ours, rootOnly)
			}
			if rule >= 0 && !allowedImport(ours, importRules[rule].allowed) {
				t.Errorf("%s imports %s: package %s may import only %v of ours", path, ours, dir, importRules[rule].allowed)
			}
		}
		if rule >= 0 { // the commands and tools import what they wire
			seen[importRules[rule].pkg] = true
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

// natsFree are the packages that must not link NATS at all, through any
// chain of imports (non-test): the event model, the GPU facts, the
// store, the detectors and the readers. A run's subject token and a lost
// batch's record are in stream for them (stream.RunToken, stream.Gap);
// the server, the client and the publisher are in stream/transport, which
// only the ingest pipeline (ingest) and the commands import.
var natsFree = []string{"stream", "gpu", "sql/...", "detectors/...", "ingest/*"}

// TestModelLinksNoNATS fails when a natsFree package links a
// github.com/nats-io package, naming the chain of imports that brings it
// in. Unlike TestImportRules it follows imports outside the module too.
func TestModelLinksNoNATS(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", "-tags", "duckdb_arrow",
		"-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}",
		"./stream", "./gpu", "./sql/...", "./detectors/...", "./ingest/...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			imports[f[0]] = f[1:]
		}
	}
	checked := map[string]bool{}
	for p := range imports {
		ours, ok := strings.CutPrefix(p, module)
		if !ok || !allowedImport(ours, natsFree) || ours == "detectors/internal/testkit" {
			continue // testkit is test support: it loads traces through ingest
		}
		checked[ours] = true
		if chain := natsChain(p, imports); chain != nil {
			t.Errorf("%s links NATS: %s; what it needs of the transport belongs in stream, or it must not need it", ours, strings.Join(chain, " -> "))
		}
	}
	for _, pattern := range natsFree {
		found := false
		for p := range checked {
			found = found || matches(p, pattern)
		}
		if !found {
			t.Errorf("go list found no package for %s: the folders moved, update natsFree", pattern)
		}
	}
}

// natsChain is a shortest chain of imports from p to a github.com/nats-io
// package, or nil.
func natsChain(p string, imports map[string][]string) []string {
	prev := map[string]string{p: ""}
	queue := []string{p}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if strings.HasPrefix(cur, "github.com/nats-io/") {
			var chain []string
			for c := cur; c != ""; c = prev[c] {
				chain = append([]string{strings.TrimPrefix(c, module)}, chain...)
			}
			return chain
		}
		for _, im := range imports[cur] {
			if _, seen := prev[im]; !seen {
				prev[im] = cur
				queue = append(queue, im)
			}
		}
	}
	return nil
}
