package ruletest

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LoadError is a problem in a rule-test file, at a line.
type LoadError struct {
	File string
	Line int
	Msg  string
}

func (e *LoadError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// loader walks a YAML document and collects every problem it meets.
type loader struct {
	file string
	errs []error
}

func (l *loader) fail(n *yaml.Node, format string, args ...any) {
	line := 1
	if n != nil {
		line = n.Line
	}
	l.errs = append(l.errs, &LoadError{File: l.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (l *loader) err() error { return errors.Join(l.errs...) }

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// field is one key of a mapping: the key's node (for its line) and value.
type field struct {
	key   *yaml.Node
	value *yaml.Node
}

// mapping reads n as a mapping whose keys must be among known; an unknown
// or repeated key is an error at its line. The result keeps the file's
// order in keys.
type mapping struct {
	node   *yaml.Node
	fields map[string]field
	keys   []string
}

func (m mapping) get(k string) *yaml.Node {
	if f, ok := m.fields[k]; ok {
		return f.value
	}
	return nil
}

func (l *loader) mapping(n *yaml.Node, what string, known ...string) (mapping, bool) {
	n = deref(n)
	m := mapping{node: n, fields: map[string]field{}}
	if n == nil || n.Kind != yaml.MappingNode {
		l.fail(n, "%s must be a mapping", what)
		return m, false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		if known != nil && !slices.Contains(known, k.Value) {
			l.fail(k, "unknown key %q in %s (known: %s)", k.Value, what, strings.Join(known, ", "))
			continue
		}
		if prev, ok := m.fields[k.Value]; ok {
			l.fail(k, "%s: %q given twice (first at line %d)", what, k.Value, prev.key.Line)
			continue
		}
		m.fields[k.Value] = field{k, v}
		m.keys = append(m.keys, k.Value)
	}
	return m, true
}

func (l *loader) sequence(n *yaml.Node, what string) ([]*yaml.Node, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		l.fail(n, "%s must be a list", what)
		return nil, false
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = deref(c)
	}
	return out, true
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func (l *loader) str(n *yaml.Node, what string) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		l.fail(n, "%s must be a string", what)
		return "", false
	}
	return n.Value, true
}

// strs reads a string or a list of strings.
func (l *loader) strs(n *yaml.Node, what string) []string {
	n = deref(n)
	if n != nil && n.Kind == yaml.ScalarNode {
		s, _ := l.str(n, what)
		return []string{s}
	}
	items, _ := l.sequence(n, what)
	var out []string
	for _, it := range items {
		if s, ok := l.str(it, what); ok {
			out = append(out, s)
		}
	}
	return out
}

func (l *loader) integer(n *yaml.Node, what string) (int, bool) {
	v, ok := l.number(n, what)
	if ok && (v != math.Trunc(v) || math.Abs(v) > 1<<53) {
		l.fail(n, "%s must be a whole number, got %s", what, n.Value)
		return 0, false
	}
	return int(v), ok
}

// number reads a number, which may carry a unit of time (ns, us, µs, ms,
// s, min, h: in nanoseconds) or of size (B, KB, MB, GB, TB, KiB, MiB,
// GiB, TiB: in bytes), as the store's columns hold them.
func (l *loader) number(n *yaml.Node, what string) (float64, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		l.fail(n, "%s must be a number", what)
		return 0, false
	}
	v, err := parseNumber(n)
	if err != nil {
		l.fail(n, "%s: %v", what, err)
		return 0, false
	}
	return v, true
}

var (
	unitRE = regexp.MustCompile(`^([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms|s|min|h|B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$`)
	units  = map[string]float64{"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "min": 60e9, "h": 3600e9,
		"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
)

func parseNumber(n *yaml.Node) (float64, error) {
	switch n.ShortTag() {
	case "!!int", "!!float":
		s := strings.ReplaceAll(n.Value, "_", "")
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			return v, nil
		}
		if v, err := strconv.ParseInt(s, 0, 64); err == nil {
			return float64(v), nil
		}
		return 0, fmt.Errorf("%q is not a number", n.Value)
	case "!!str":
		m := unitRE.FindStringSubmatch(strings.TrimSpace(n.Value))
		if m == nil {
			return 0, fmt.Errorf("%q is not a number (a unit, if any, is one of ns, us, ms, s, min, h, B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", n.Value)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", n.Value)
		}
		return v * units[m[2]], nil
	}
	return 0, fmt.Errorf("%q is not a number", n.Value)
}

// tolerance is how far a value may be from the expected one: an absolute
// amount, or a share of the expected value ("1%").
type tolerance struct {
	abs, rel float64
}

func (t tolerance) ok(want, got float64) bool {
	if math.IsNaN(got) {
		return math.IsNaN(want)
	}
	d := math.Abs(want - got)
	return d <= t.abs || d <= t.rel*math.Abs(want) || d <= 1e-9*math.Max(math.Abs(want), 1)
}

func (t tolerance) String() string {
	switch {
	case t.rel > 0:
		return fmt.Sprintf(" ±%g%%", 100*t.rel)
	case t.abs > 0:
		return fmt.Sprintf(" ±%g", t.abs)
	}
	return ""
}

func (l *loader) tolerance(n *yaml.Node) tolerance {
	n = deref(n)
	if n != nil && n.Kind == yaml.ScalarNode && strings.HasSuffix(n.Value, "%") {
		v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(n.Value, "%")), 64)
		if err != nil || v < 0 {
			l.fail(n, "tolerance %q: a share is a non-negative number followed by %%", n.Value)
		}
		return tolerance{rel: v / 100}
	}
	v, ok := l.number(n, "tolerance")
	if ok && v < 0 {
		l.fail(n, "tolerance must not be negative")
	}
	return tolerance{abs: v}
}
