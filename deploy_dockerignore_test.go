package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dockerIgnore is a .dockerignore's patterns, matched as Docker matches
// them (github.com/moby/patternmatcher): each against the path from the
// context's root and every folder above it, the last match deciding, a
// leading ! taking a path back in; * and ? stay within a name, **
// crosses folders.
type dockerIgnore []struct {
	re      *regexp.Regexp
	negated bool
}

func readDockerIgnore(t *testing.T, path string) dockerIgnore {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d dockerIgnore
	for _, l := range strings.Split(string(raw), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		neg := strings.HasPrefix(l, "!")
		l = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(strings.TrimPrefix(l, "!"))), "/")
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(l); i++ {
			switch ch := l[i]; {
			case ch == '*' && i+1 < len(l) && l[i+1] == '*':
				i++
				if i+1 < len(l) && l[i+1] == '/' {
					i++
				}
				if i+1 == len(l) {
					re.WriteString(".*")
				} else {
					re.WriteString("(.*/)?")
				}
			case ch == '*':
				re.WriteString("[^/]*")
			case ch == '?':
				re.WriteString("[^/]")
			case ch == '[' || ch == ']':
				re.WriteByte(ch)
			default:
				re.WriteString(regexp.QuoteMeta(string(ch)))
			}
		}
		re.WriteString("$")
		rx, err := regexp.Compile(re.String())
		if err != nil {
			t.Fatalf("%s: %q: %v", path, l, err)
		}
		d = append(d, struct {
			re      *regexp.Regexp
			negated bool
		}{rx, neg})
	}
	return d
}

// excludes: whether the build context leaves path (from its root) out.
func (d dockerIgnore) excludes(path string) bool {
	path = filepath.ToSlash(filepath.Clean(path))
	parts := strings.Split(path, "/")
	out := false
	for _, p := range d {
		match := false
		for i := 1; i <= len(parts) && !match; i++ {
			match = p.re.MatchString(strings.Join(parts[:i], "/"))
		}
		if match {
			out = !p.negated
		}
	}
	return out
}

// The top-level .dockerignore keeps the build context of deploy/Dockerfile
// (COPY . .) to what go build needs: it leaves out node_modules, bin, out,
// the test inputs, benchmark outputs and .git, and no file that go.mod,
// go.sum, a //go:embed directive (in any non-test Go file of the module)
// or a package 'go build -tags duckdb_arrow .' compiles needs.
func TestDeployDockerignore(t *testing.T) {
	d := readDockerIgnore(t, ".dockerignore")
	for _, p := range []string{"grafana-plugin/node_modules/react/index.js", "bin/trainscope", "out/demo/report.md",
		"testdata/kineto/rank0.json", "detectors/testdata/x.json", ".git/HEAD", "bench/syn8/rank0.json", "bench/tmp/x",
		"deploy/compose/flight_token", "deploy/compose/.env"} {
		if !d.excludes(p) {
			t.Errorf(".dockerignore: %s is in the build context", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "main.go", "deploy/Dockerfile"} {
		if d.excludes(p) {
			t.Errorf(".dockerignore leaves out %s", p)
		}
	}

	// every file a //go:embed names, in every non-test Go file of this
	// module (not the nested ones: grafana-plugin has its own go.mod)
	embed := regexp.MustCompile(`^//go:embed\s+(.+)$`)
	files := 0
	err := filepath.WalkDir(".", func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			name := e.Name()
			if path != "." && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(raw), "\n") {
			m := embed.FindStringSubmatch(strings.TrimSpace(l))
			if m == nil {
				continue
			}
			for _, pat := range strings.Fields(m[1]) {
				pat = strings.Trim(strings.TrimPrefix(pat, "all:"), "\"`")
				matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), pat))
				if len(matches) == 0 {
					t.Errorf("%s: //go:embed %s matches nothing", path, pat)
				}
				for _, f := range matches {
					filepath.WalkDir(f, func(f string, e os.DirEntry, err error) error {
						if err == nil && !e.IsDir() {
							files++
							if d.excludes(f) {
								t.Errorf(".dockerignore leaves out %s, which %s embeds", f, path)
							}
						}
						return err
					})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Error("found no embedded file: the //go:embed scan is broken")
	}

	// every file of every package of this module that the image's go build
	// compiles or embeds
	out, err := exec.Command("go", "list", "-tags", "duckdb_arrow", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}
{{end}}{{range .CgoFiles}}{{$d}}/{{.}}
{{end}}{{range .CFiles}}{{$d}}/{{.}}
{{end}}{{range .HFiles}}{{$d}}/{{.}}
{{end}}{{range .SFiles}}{{$d}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}
{{end}}{{end}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, _ := os.Getwd()
	n := 0
	for _, f := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, f)
		if err != nil || strings.HasPrefix(rel, "..") {
			t.Errorf("go list: %s is outside the module", f)
			continue
		}
		if n++; d.excludes(rel) {
			t.Errorf(".dockerignore leaves out %s, which go build -tags duckdb_arrow . needs", rel)
		}
	}
	if n == 0 {
		t.Error("go list found no file of this module")
	}
}
