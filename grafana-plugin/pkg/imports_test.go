package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The plugin binary is pure Go and only queries (DESIGN.md, folders table):
// Grafana runs it on any glibc or musl host, and building it must not need
// cgo or DuckDB. Test files may load the product (e2e/demostore_test.go
// does); non-test files may not.

const (
	product = "github.com/trainscope/trainscope/"
	ours    = product + "grafana-plugin/"
)

// productAllowed are the product packages (relative to the product module)
// that non-test files of the plugin module may import. DESIGN.md allows the
// client side of stream and sql; the plugin needs none of them today, and
// sql/flightsrv (the server as well as the dialer) pulls in DuckDB.
var productAllowed = map[string]bool{}

// forbiddenImport says why non-test plugin code may not import p, or "".
func forbiddenImport(p string) string {
	switch {
	case p == "C":
		return "cgo"
	case strings.HasPrefix(p, "github.com/duckdb/"):
		return "DuckDB (cgo)"
	case strings.HasPrefix(p, ours):
		return ""
	case strings.HasPrefix(p, product) && !productAllowed[strings.TrimPrefix(p, product)]:
		return "the product (readers, detectors, store): the plugin only queries"
	}
	return ""
}

// nonTestGoFiles lists the module's non-test .go files under root, whatever
// their build tags, skipping what the go tool skips and node_modules.
func nonTestGoFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "node_modules" || name == "dist" || name == "testdata" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// badImports returns "file:line: imports p (why)" for every forbidden import
// in the non-test files under root.
func badImports(t *testing.T, root string) []string {
	t.Helper()
	var bad []string
	for _, path := range nonTestGoFiles(t, root) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				t.Fatalf("%s: import %s: %v", fset.Position(im.Pos()), im.Path.Value, err)
			}
			if why := forbiddenImport(p); why != "" {
				bad = append(bad, fset.Position(im.Pos()).String()+": imports "+p+" ("+why+")")
			}
		}
	}
	return bad
}

func TestNonTestCodeImportsNoProduct(t *testing.T) {
	files := nonTestGoFiles(t, "..")
	if len(files) < 5 || !containsSuffix(files, filepath.Join("pkg", "main.go")) {
		t.Fatalf("walked the wrong tree: %d non-test files %v", len(files), files)
	}
	for _, b := range badImports(t, "..") {
		t.Error(b)
	}
}

func TestForbiddenImport(t *testing.T) {
	for p, want := range map[string]bool{
		"C":                                     true,
		"github.com/duckdb/duckdb-go/v2":        true,
		product + "sql/duck":                    true,
		product + "sql/flightsrv":               true,
		product + "detectors":                   true,
		product + "ingest":                      true,
		ours + "pkg/macros":                     false,
		"github.com/apache/arrow-go/v18/arrow":  false,
		"github.com/trainscope/trainscopex/foo": false,
		"github.com/grafana/grafana-plugin-sdk-go/backend": false,
	} {
		if got := forbiddenImport(p) != ""; got != want {
			t.Errorf("forbiddenImport(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestBadImportsNamesFileAndLine checks the guard on a planted file: a
// non-test file importing the store is reported with its position, a test
// file doing the same is not.
func TestBadImportsNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bad.go", "package x\n\nimport (\n\t\"fmt\"\n\t\""+product+"sql/duck\"\n)\n")
	write("bad_test.go", "package x\n\nimport _ \""+product+"detectors\"\n")
	write("ok.go", "package x\n\nimport _ \""+ours+"pkg/macros\"\n")
	got := badImports(t, dir)
	want := filepath.Join(dir, "bad.go") + ":5:2: imports " + product + "sql/duck"
	if len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Fatalf("badImports = %q, want one entry starting %q", got, want)
	}
}

// TestBuildNeedsNoCgo checks the transitive closure the parse above cannot
// see: no dependency of the module's non-test packages, with the tag the
// tests use, has cgo files (a third-party module could bring them).
func TestBuildNeedsNoCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	cmd := exec.Command("go", "list", "-deps", "-tags", "duckdb_arrow",
		"-f", "{{if not .Standard}}{{if .CgoFiles}}{{.ImportPath}}{{end}}{{end}}", "./...")
	cmd.Dir = ".."
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=1") // so that cgo files are listed as such
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("the plugin's non-test packages depend on cgo packages:\n%s", s)
	}
}

func containsSuffix(files []string, suffix string) bool {
	for _, f := range files {
		if strings.HasSuffix(f, string(filepath.Separator)+suffix) {
			return true
		}
	}
	return false
}
