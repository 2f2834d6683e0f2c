package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// shellCmd is one command of a documented shell snippet.
type shellCmd struct {
	text  string   // as written
	dir   string   // DIR of "(cd DIR && command)"; "" for the repository root
	words []string // quotes removed, variables expanded
}

var (
	shellAssign   = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)
	shellSubshell = regexp.MustCompile(`^\(cd (\S+) && ([^()#]+)\)\s*(#.*)?$`)
)

// shellCommands reads a snippet the way sh would, for the few shapes the
// docs use: one command a line (a trailing backslash continues it), #
// comments, NAME=VALUE lines that set a variable, '...' and "..."
// quoting, $NAME and ${NAME} from an earlier line or vars (a variable
// set nowhere is a problem), $(...) kept as written (it stands for its
// output), and (cd DIR && command). Pipes, lists, redirections, globs and
// backquotes are problems: no test knows what they do.
func shellCommands(text string, vars map[string]string) (cmds []shellCmd, problems []string) {
	var lines []string
	cur := ""
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasSuffix(l, `\`) {
			cur += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		lines = append(lines, cur+l)
		cur = ""
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	for _, line := range lines {
		c := shellCmd{text: line}
		body := line
		if m := shellSubshell.FindStringSubmatch(line); m != nil {
			c.dir, body = m[1], m[2]
		}
		words, err := shellWords(body, vars)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", line, err))
			continue
		}
		if len(words) == 0 {
			continue
		}
		if m := shellAssign.FindStringSubmatch(words[0]); m != nil && len(words) == 1 && c.dir == "" {
			vars[m[1]] = m[2]
			continue
		}
		c.words = words
		cmds = append(cmds, c)
	}
	return cmds, problems
}

// shellWords splits one command line into words (see shellCommands).
func shellWords(s string, vars map[string]string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); {
		switch ch := s[i]; {
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			i++
		case ch == '#' && !inWord:
			i = len(s)
		case ch == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unclosed '")
			}
			w.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case ch == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; {
				switch {
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0:
					w.WriteByte(s[i+1])
					i += 2
				case s[i] == '$':
					text, n, err := shellDollar(s[i:], vars)
					if err != nil {
						return nil, err
					}
					w.WriteString(text)
					i += n
				case s[i] == '`':
					return nil, errors.New("backquotes: no test knows this shape")
				default:
					w.WriteByte(s[i])
					i++
				}
			}
			if i >= len(s) {
				return nil, errors.New(`unclosed "`)
			}
			i++
		case ch == '$':
			text, n, err := shellDollar(s[i:], vars)
			if err != nil {
				return nil, err
			}
			w.WriteString(text)
			inWord = true
			i += n
		case ch == '\\' && i+1 < len(s):
			w.WriteByte(s[i+1])
			inWord = true
			i += 2
		case strings.IndexByte("|&;<>()`*?[", ch) >= 0:
			return nil, fmt.Errorf("%q: no test knows this shape", ch)
		default:
			w.WriteByte(ch)
			inWord = true
			i++
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// shellDollar expands the $ at the start of s: what it stands for and how
// many bytes it took.
func shellDollar(s string, vars map[string]string) (string, int, error) {
	isName := func(ch byte, first bool) bool {
		return ch == '_' || ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || !first && ch >= '0' && ch <= '9'
	}
	lookup := func(name string) (string, error) {
		v, ok := vars[name]
		if !ok {
			return "", fmt.Errorf("$%s is set by no earlier line", name)
		}
		return v, nil
	}
	switch {
	case strings.HasPrefix(s, "$("): // a command's output: kept as written
		depth := 0
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '(':
				depth++
			case ')':
				if depth--; depth == 0 {
					return s[:i+1], i + 1, nil
				}
			}
		}
		return "", 0, errors.New("unclosed $(")
	case strings.HasPrefix(s, "${"):
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", 0, errors.New("unclosed ${")
		}
		for i := 2; i < end; i++ {
			if !isName(s[i], i == 2) {
				return "", 0, fmt.Errorf("%s: only ${NAME}", s[:end+1])
			}
		}
		v, err := lookup(s[2:end])
		return v, end + 1, err
	case len(s) > 1 && isName(s[1], true):
		n := 1
		for n < len(s) && isName(s[n], n == 1) {
			n++
		}
		v, err := lookup(s[1:n])
		return v, n, err
	}
	return "$", 1, nil
}

// readmeBlock is the one ```sh block of deploy/README.md that holds
// marker, unindented.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur []string
	in, indent := false, ""
	for _, l := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case !in && trimmed == "```sh":
			in, indent, cur = true, l[:strings.Index(l, "`")], nil
		case in && trimmed == "```":
			in = false
			if block := strings.Join(cur, "\n"); strings.Contains(block, marker) {
				blocks = append(blocks, block)
			}
		case in:
			cur = append(cur, strings.TrimPrefix(l, indent))
		}
	}
	if len(blocks) != 1 {
		t.Fatalf("deploy/README.md: %d ```sh blocks hold %q: want one, the commands in order", len(blocks), marker)
	}
	return blocks[0]
}

// commentCommands are the commands a file's leading comment gives, the
// lines indented "#   ".
func commentCommands(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, l := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		if c, ok := strings.CutPrefix(l, "#   "); ok {
			cmds = append(cmds, c)
		}
	}
	if len(cmds) == 0 {
		t.Fatalf("%s: its leading comment gives no commands", path)
	}
	return strings.Join(cmds, "\n")
}

// moveBefore is cmds with the first command whose text starts with what
// moved to just before the first one starting with before.
func moveBefore(t *testing.T, cmds []shellCmd, what, before string) []shellCmd {
	t.Helper()
	find := func(cmds []shellCmd, prefix string) int {
		for i, c := range cmds {
			if strings.HasPrefix(c.text, prefix) {
				return i
			}
		}
		t.Fatalf("no command starts with %q: the documented commands changed, change the test with them", prefix)
		return -1
	}
	i := find(cmds, what)
	moved := cmds[i]
	out := slices.Delete(slices.Clone(cmds), i, i+1)
	j := find(out, before)
	return slices.Insert(out, j, moved)
}
