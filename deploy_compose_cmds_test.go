package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// composeWorld is what the documented compose commands have made so far.
type composeWorld struct {
	rules map[string]*makeRule
	made  []string // recipes of the make targets run, variables expanded
	up    *composeFile
}

type makeRule struct {
	prereqs []string
	recipe  string
}

// readMakefiles reads the rules of a Makefile and the files it includes,
// with make's variables ($(NAME), set with :=, ?= or =) expanded.
func readMakefiles(t *testing.T, path string) map[string]*makeRule {
	t.Helper()
	vars := map[string]string{}
	rules := map[string]*makeRule{}
	varRE := regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*[:?]?=\s*(.*)$`)
	ruleRE := regexp.MustCompile(`^([A-Za-z0-9_./-]+(?:\s+[A-Za-z0-9_./-]+)*)\s*:(?:\s+(.*))?$`)
	var read func(string)
	read = func(path string) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var cur []*makeRule
		inDefine := false
		for _, l := range strings.Split(string(raw), "\n") {
			switch {
			case strings.HasPrefix(l, "define "):
				inDefine = true
			case l == "endef":
				inDefine = false
			case inDefine:
			case strings.HasPrefix(l, "\t"):
				for _, r := range cur {
					r.recipe += strings.TrimSpace(l) + "\n"
				}
			case strings.HasPrefix(l, "include "):
				read(strings.TrimSpace(strings.TrimPrefix(l, "include ")))
			default:
				if m := varRE.FindStringSubmatch(l); m != nil {
					if _, set := vars[m[1]]; !set || !strings.Contains(l, "?=") {
						vars[m[1]] = m[2]
					}
					continue
				}
				cur = nil
				if m := ruleRE.FindStringSubmatch(l); m != nil {
					prereqs, _, _ := strings.Cut(m[2], "#")
					for _, name := range strings.Fields(m[1]) {
						r := &makeRule{prereqs: strings.Fields(prereqs)}
						rules[name] = r
						cur = append(cur, r)
					}
				}
			}
		}
	}
	read(path)
	expand := func(s string) string {
		ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
		for range 10 {
			s = ref.ReplaceAllStringFunc(s, func(m string) string { return vars[m[2:len(m)-1]] })
		}
		return strings.ReplaceAll(s, "$$", "$")
	}
	for _, r := range rules {
		r.recipe = expand(r.recipe)
	}
	return rules
}

// recipes is what make runs for target: its recipe and its prerequisites'.
func (w *composeWorld) recipes(target string, seen map[string]bool) string {
	r, ok := w.rules[target]
	if !ok || seen[target] {
		return ""
	}
	seen[target] = true
	text := ""
	for _, p := range r.prereqs {
		text += w.recipes(p, seen)
	}
	return text + r.recipe
}

// need is a problem unless the file at path (from the repository root)
// is there: made by an earlier step, or in the repository (present, and
// no .gitignore leaves it out as a build output).
func (w *composeWorld) need(step, path string) []string {
	path = filepath.ToSlash(filepath.Clean(path))
	for _, r := range w.made {
		if regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(path) + `(/|\s|$)`).MatchString(r) {
			return nil
		}
	}
	// a build output is judged the same whether or not this checkout has
	// built it (a fresh clone has no bin/)
	if gitIgnored(path) {
		return []string{fmt.Sprintf("%s: needs %s, a build output (.gitignore) that no earlier step makes", step, path)}
	}
	if _, err := os.Stat(path); err != nil {
		return []string{fmt.Sprintf("%s: needs %s, which no earlier step makes", step, path)}
	}
	return nil
}

// gitIgnored: whether a .gitignore on the way to path names it or a
// folder above it (the plain patterns this repository uses).
func gitIgnored(path string) bool {
	parts := strings.Split(path, "/")
	for d := 0; d < len(parts); d++ {
		raw, err := os.ReadFile(filepath.Join(append(parts[:d:d], ".gitignore")...))
		if err != nil {
			continue
		}
		for _, pat := range strings.Split(string(raw), "\n") {
			pat = strings.TrimSpace(pat)
			if pat == "" || strings.HasPrefix(pat, "#") || strings.HasPrefix(pat, "!") {
				continue
			}
			anchored := strings.Contains(strings.TrimSuffix(pat, "/"), "/")
			pat = strings.Trim(pat, "/")
			for e := d + 1; e <= len(parts); e++ {
				target := parts[e-1]
				if anchored {
					target = strings.Join(parts[d:e], "/")
				}
				if ok, _ := filepath.Match(pat, target); ok {
					return true
				}
			}
		}
	}
	return false
}

// run is one documented compose command; its problems.
func (w *composeWorld) run(t *testing.T, c shellCmd) []string {
	t.Helper()
	a := c.words
	bad := func(f string, args ...any) []string { return []string{c.text + ": " + fmt.Sprintf(f, args...)} }
	switch {
	case c.dir != "":
		return bad("no test knows this shape")
	case a[0] == "make" && len(a) > 1:
		for _, target := range a[1:] {
			if _, ok := w.rules[target]; !ok || strings.HasPrefix(target, "-") {
				return bad("%s is no target of the Makefile or the files it includes", target)
			}
			w.made = append(w.made, w.recipes(target, map[string]bool{}))
		}
	case len(a) >= 5 && a[0] == "docker" && a[1] == "compose" && a[2] == "-f" && a[4] == "up":
		for _, f := range a[5:] {
			if f != "--build" && f != "-d" {
				return bad("no test knows the flag %s", f)
			}
		}
		raw, err := os.ReadFile(a[3])
		if err != nil {
			return bad("%v", err)
		}
		var cf composeFile
		if err := yaml.Unmarshal(raw, &cf); err != nil {
			return bad("%v", err)
		}
		dir := filepath.Dir(a[3])
		problems := w.need(c.text, filepath.Join(dir, ".env"))
		for _, s := range cf.Services {
			for _, v := range s.Volumes {
				if src, _, _ := strings.Cut(v, ":"); strings.HasPrefix(src, ".") {
					problems = append(problems, w.need(c.text, filepath.Join(dir, src))...)
				}
			}
			if s.Build != nil {
				problems = append(problems, w.need(c.text, filepath.Join(dir, s.Build["context"], s.Build["dockerfile"]))...)
			}
		}
		for _, sec := range cf.Secrets {
			problems = append(problems, w.need(c.text, filepath.Join(dir, sec.File))...)
		}
		w.up = &cf
		return problems
	case len(a) >= 2 && strings.HasSuffix(a[0], "/trainscope") && a[1] == "publish":
		problems := w.need(c.text, a[0])
		var natsURL, run string
		var dirs []string
		for i := 2; i < len(a); i++ {
			switch {
			case (a[i] == "--nats-url" || a[i] == "--run") && i+1 < len(a):
				if a[i] == "--run" {
					run = a[i+1]
				} else {
					natsURL = a[i+1]
				}
				i++
			case strings.HasPrefix(a[i], "-"):
				return bad("no test knows the flag %s", a[i])
			default:
				dirs = append(dirs, a[i])
			}
		}
		if run == "" || len(dirs) != 1 {
			problems = append(problems, bad("want --run ID and one folder of traces")...)
		}
		if w.up == nil {
			return append(problems, bad("nothing is up to publish to: docker compose up comes first")...)
		}
		u, err := url.Parse(natsURL)
		if err != nil || u.Scheme != "nats" || u.Hostname() != "localhost" {
			return append(problems, bad("--nats-url %q: want nats://user:password@localhost:port", natsURL)...)
		}
		pw, _ := u.User.Password()
		env := dotEnv(t, filepath.Join("deploy", "compose", ".env"))
		if u.User.Username() != "trainscope" || pw != env["NATS_PASSWORD"] {
			problems = append(problems, bad("the NATS user is trainscope with .env's NATS_PASSWORD")...)
		}
		published := false
		for _, s := range w.up.Services {
			published = published || strings.HasPrefix(s.Image, "nats:") && slices.Contains(s.Ports, u.Port()+":4222")
		}
		if !published {
			problems = append(problems, bad("no NATS service publishes port %s", u.Port())...)
		}
		return problems
	default:
		return bad("no test knows this command shape")
	}
	return nil
}

// runCompose runs documented compose commands from nothing made.
func runCompose(t *testing.T, cmds []shellCmd) []string {
	t.Helper()
	w := &composeWorld{rules: readMakefiles(t, "Makefile")}
	var problems []string
	for _, c := range cmds {
		problems = append(problems, w.run(t, c)...)
	}
	if w.up == nil {
		problems = append(problems, "the commands never start the compose file")
	}
	return problems
}

// The compose commands deploy/README.md and compose.yaml's header give
// work in the order given: make plugin (a real target, which builds the
// grafana-plugin/dist that compose mounts) before docker compose up, which
// finds every file it mounts, builds or reads as a secret; make build
// before bin/trainscope publish, which publishes to the NATS port compose
// publishes with .env's password. A command of any other shape fails, so
// the docs cannot drift from what this test knows; moving a step before
// the one it needs fails too.
func TestDeployComposeCommands(t *testing.T) {
	readme, problems := shellCommands(readmeBlock(t, "docker compose"), map[string]string{})
	header, p := shellCommands(commentCommands(t, filepath.Join("deploy", "compose", "compose.yaml")), map[string]string{})
	problems = append(problems, p...)
	problems = append(problems, runCompose(t, readme)...)
	problems = append(problems, runCompose(t, header)...)
	for _, p := range problems {
		t.Error(p)
	}
	var a, b []string
	for _, c := range readme {
		a = append(a, strings.Join(c.words, " "))
	}
	for _, c := range header {
		b = append(b, strings.Join(c.words, " "))
	}
	if !slices.Equal(a, b) {
		t.Errorf("deploy/README.md gives\n\t%s\ncompose.yaml's header\n\t%s", strings.Join(a, "\n\t"), strings.Join(b, "\n\t"))
	}
	if t.Failed() {
		return
	}
	wants := func(name string, cmds []shellCmd, want string) {
		t.Helper()
		p := runCompose(t, cmds)
		if !slices.ContainsFunc(p, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("%s: want a problem saying %q, got %q", name, want, p)
		}
	}
	for _, m := range [][3]string{
		{"docker compose", "make plugin", "needs grafana-plugin/dist, a build output (.gitignore) that no earlier step makes"},
		{"bin/trainscope publish", "make build", "needs bin/trainscope, a build output (.gitignore) that no earlier step makes"},
		{"bin/trainscope publish", "docker compose", "nothing is up to publish to"},
	} {
		wants(fmt.Sprintf("%q moved before %q", m[0], m[1]), moveBefore(t, readme, m[0], m[1]), m[2])
	}
	for extra, want := range map[string]string{
		"make plugins":                       "plugins is no target",
		"docker compose up":                  "no test knows this command shape",
		"trainscope publish --run x traces/": "no test knows this command shape",
	} {
		cmds, _ := shellCommands(extra, map[string]string{})
		wants(extra, append(slices.Clone(readme), cmds...), want)
	}
}
