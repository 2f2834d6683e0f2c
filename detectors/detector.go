package detectors

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trainscope/trainscope/detectors/report"
)

// Kinds of detector.
const (
	KindMetric  = "metric"
	KindFinding = "finding"
)

// Severities of findings, from least to most urgent: the report's, one
// list for the headers' check and the report's counts.
var Severities = report.Severities

// Detector is one parsed .sql file.
type Detector struct {
	Name        string
	Category    string
	Kind        string
	Severity    string
	Description string
	Fix         string
	// Order places a metric's table in the report: ascending, before the
	// tables of detectors without one (0), which follow by name.
	Order int
	// Cause, Shows, Symptom and Evidence place a finding detector in the
	// cause graph (roles.go): the cause its findings make, what of a cause
	// they show, the symptom a cause explains, the kinds of cause its
	// findings are evidence for.
	Cause    string
	Shows    []string
	Symptom  string
	Evidence []string
	Params   []Param
	SQL      string
	File     string
	Line     int // line where the SQL body starts
	Builtin  bool
	// causes is the cause-graph config of the Set the detector is in
	// (its Config.Causes): BuildReport reads it from the results.
	causes CausesConfig
}

// Param is a threshold: a named number bound as $name.
type Param struct {
	Name    string
	Default float64
	Value   float64 // the value in force after overrides
	Doc     string
	Line    int
}

// LoadError is a problem in a detector file, at a line.
type LoadError struct {
	File string
	Line int
	Msg  string
}

func (e *LoadError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// headerKeys are the keys a detector's header may hold.
var headerKeys = []string{"name", "category", "kind", "severity", "description", "fix", "threshold", "order", "cause", "shows", "symptom", "evidence"}

var (
	headerLine = regexp.MustCompile(`^--\s*([a-z_]+)\s*:\s*(.*?)\s*$`)
	thresholdV = regexp.MustCompile(`^([a-z_][a-z0-9_]*)\s*=\s*([-+0-9.eE]+)\s*(?:#\s*(.*))?$`)
	nameRE     = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// Parse reads one detector from its file name and text.
func Parse(file string, text []byte) (*Detector, error) {
	d := &Detector{File: file, Severity: "info"}
	var errs []error
	fail := func(line int, format string, args ...any) {
		errs = append(errs, &LoadError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	lines := strings.Split(strings.ReplaceAll(string(text), "\r\n", "\n"), "\n")
	seen := map[string]int{}
	body := len(lines)
	for i, raw := range lines {
		line := strings.TrimSpace(raw)
		if line == "" || line == "--" {
			continue
		}
		if !strings.HasPrefix(line, "--") {
			body = i
			break
		}
		m := headerLine.FindStringSubmatch(line)
		if m == nil {
			fail(i+1, "header line must be '-- key: value', got %q", line)
			continue
		}
		key, val := m[1], m[2]
		if prev, ok := seen[key]; ok && key != "threshold" {
			fail(i+1, "%s given twice (first at line %d)", key, prev)
			continue
		}
		seen[key] = i + 1
		switch key {
		case "name":
			d.Name = val
		case "category":
			d.Category = val
		case "kind":
			d.Kind = val
		case "severity":
			d.Severity = val
		case "description":
			d.Description = val
		case "fix":
			d.Fix = val
		case "order":
			n, err := strconv.Atoi(val)
			if err != nil || n <= 0 {
				fail(i+1, "order %q must be a whole number above 0", val)
				continue
			}
			d.Order = n
		case "threshold":
			tm := thresholdV.FindStringSubmatch(val)
			if tm == nil {
				fail(i+1, "threshold must be 'name = number [# what it means]', got %q", val)
				continue
			}
			v, err := strconv.ParseFloat(tm[2], 64)
			if err != nil {
				fail(i+1, "threshold %s: %q is not a number", tm[1], tm[2])
				continue
			}
			for _, p := range d.Params {
				if p.Name == tm[1] {
					fail(i+1, "threshold %s declared twice (first at line %d)", tm[1], p.Line)
				}
			}
			d.Params = append(d.Params, Param{Name: tm[1], Default: v, Value: v, Doc: tm[3], Line: i + 1})
		default:
			if parseRole(d, key, val, func(format string, args ...any) { fail(i+1, format, args...) }) {
				continue
			}
			fail(i+1, "unknown header key %q (known: %s)", key, strings.Join(headerKeys, ", "))
		}
	}
	d.Line = body + 1
	d.SQL = strings.TrimSpace(strings.Join(lines[min(body, len(lines)):], "\n"))
	base := strings.TrimSuffix(filepath.Base(file), ".sql")
	switch {
	case d.Name == "":
		fail(1, "missing '-- name:' header")
	case !nameRE.MatchString(d.Name):
		fail(seen["name"], "name %q must be lower_snake_case", d.Name)
	case d.Name != base:
		fail(seen["name"], "name %q differs from the file name %q", d.Name, base+".sql")
	}
	if d.Category == "" {
		fail(1, "missing '-- category:' header")
	}
	if d.Description == "" {
		fail(1, "missing '-- description:' header")
	}
	switch d.Kind {
	case KindMetric, KindFinding:
	case "":
		fail(1, "missing '-- kind:' header (metric or finding)")
	default:
		fail(seen["kind"], "kind %q must be metric or finding", d.Kind)
	}
	if d.Order > 0 && d.Kind == KindFinding {
		fail(seen["order"], "order places a metric's table in the report; a finding detector has none")
	}
	checkRoles(d, seen, fail)
	if !validSeverity(d.Severity) {
		fail(seen["severity"], "severity %q must be one of %s", d.Severity, strings.Join(Severities, ", "))
	}
	if d.SQL == "" {
		fail(d.Line, "no SQL after the header")
	} else {
		checkBody(d, fail)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return d, nil
}

func validSeverity(s string) bool {
	for _, v := range Severities {
		if s == v {
			return true
		}
	}
	return false
}

// checkBody verifies parameter use and that the body is one statement.
func checkBody(d *Detector, fail func(int, string, ...any)) {
	used := map[string]int{}
	line := d.Line
	sql := d.SQL
	inStr, inComment := false, false
	for i := 0; i < len(sql); i++ {
		ch := sql[i]
		switch {
		case ch == '\n':
			line++
			inComment = false
		case inComment:
		case inStr:
			if ch == '\'' {
				inStr = false
			}
		case ch == '\'':
			inStr = true
		case ch == '-' && i+1 < len(sql) && sql[i+1] == '-':
			inComment = true
		case ch == ';':
			if strings.TrimSpace(stripComments(sql[i+1:])) != "" {
				fail(line, "a detector is one SQL statement; found more after ';'")
				return
			}
		case ch == '$':
			j := i + 1
			for j < len(sql) && (sql[j] == '_' || sql[j] >= 'a' && sql[j] <= 'z' || sql[j] >= '0' && sql[j] <= '9') {
				j++
			}
			name := sql[i+1 : j]
			if name == "" {
				continue
			}
			if _, ok := used[name]; !ok {
				used[name] = line
			}
			if !d.hasParam(name) {
				fail(line, "parameter $%s is not declared; add '-- threshold: %s = <default>'", name, name)
			}
			i = j - 1
		}
	}
	for _, p := range d.Params {
		if _, ok := used[p.Name]; !ok {
			fail(p.Line, "threshold %s is declared but the SQL never uses $%s", p.Name, p.Name)
		}
	}
	d.SQL = strings.TrimSuffix(strings.TrimSpace(d.SQL), ";")
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, "--"); i >= 0 {
			l = l[:i]
		}
		b.WriteString(l)
	}
	return b.String()
}

func (d *Detector) hasParam(name string) bool {
	for _, p := range d.Params {
		if p.Name == name {
			return true
		}
	}
	return false
}

//go:embed sql/*.sql
var builtin embed.FS

// Builtin returns the embedded detectors.
func Builtin() ([]*Detector, error) {
	ds, err := loadFS(builtin, "sql", "detectors/sql/")
	for _, d := range ds {
		d.Builtin = true
	}
	return ds, err
}

// LoadDir reads every .sql file in a folder.
func LoadDir(dir string) ([]*Detector, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("detector folder: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("detector folder %s: not a directory", dir)
	}
	return loadFS(os.DirFS(dir), ".", dir+string(filepath.Separator))
}

func loadFS(fsys fs.FS, root, prefix string) ([]*Detector, error) {
	names, err := fs.Glob(fsys, filepath.ToSlash(filepath.Join(root, "*.sql")))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*Detector
	var errs []error
	for _, n := range names {
		text, err := fs.ReadFile(fsys, n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d, err := Parse(prefix+filepath.Base(n), text)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, d)
	}
	return out, errors.Join(errs...)
}

// Set is the detectors in force: built-ins plus user folders, with
// threshold overrides applied.
type Set struct {
	Detectors []*Detector
	// Config is what NewSet was given: the audit rules a run's launch
	// script brings are tuned by the same thresholds.
	Config Config
	// Timed, when set, hears how long each shared view took to compute
	// ("view gpu_busy") and each detector took to run ("detector
	// top_kernels"): what `analyze --timing` lists.
	Timed func(what string, took time.Duration)
	// Planned, when set with Timed, hears each detector query's split of
	// DuckDB's planning (binding, optimizers, physical plan) and the rest
	// of its latency.
	Planned func(planning, executing time.Duration)
	// Workers is how many detectors run at once on an in-memory store
	// (each on a connection of its own); 0 or 1 runs them one by one.
	Workers int
	// Progress, when set, hears after each detector of a pass how many of
	// the pass's detectors are done; calls do not overlap.
	Progress func(done, total int)
	// Uncommented leaves out the comments that document each metric
	// table's columns for SQL clients, for a store no client will open
	// (analyze without --db): 349 statements, 0.18 s of the pass's
	// connection time on any input.
	Uncommented bool
}

// Names are the names of the set's detectors of kind (KindMetric,
// KindFinding), in the set's order.
func (s *Set) Names(kind string) []string {
	var names []string
	for _, d := range s.Detectors {
		if d.Kind == kind {
			names = append(names, d.Name)
		}
	}
	return names
}

// Config selects and tunes detectors.
type Config struct {
	// Dirs are extra folders of .sql detectors.
	Dirs []string `mapstructure:"dirs"`
	// Disable names detectors not to run.
	Disable []string `mapstructure:"disable"`
	// Thresholds overrides defaults: detector -> threshold -> value.
	Thresholds map[string]map[string]float64 `mapstructure:"thresholds"`
	// Causes are the cause graph's thresholds, for the reports built from
	// the set's results (the config's causes section, not this one's);
	// zero: the defaults.
	Causes CausesConfig `mapstructure:"-"`
}

// Validate reports the problems a config file can have before any
// detector is loaded (each extra folder must be one), with key paths under
// prefix; NewSet reports the rest (unknown detectors and thresholds).
func (c Config) Validate(prefix string) error {
	var errs []error
	for i, d := range c.Dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("%s.dirs[%d]: %q is not a readable folder", prefix, i, d))
		}
	}
	return errors.Join(errs...)
}

// NewSet loads the built-ins and cfg.Dirs and applies cfg. Every problem is
// reported, each with its file:line or config key path.
func NewSet(cfg Config) (*Set, error) {
	var errs []error
	all, err := Builtin()
	if err != nil {
		errs = append(errs, err)
	}
	byName := map[string]*Detector{}
	for _, d := range all {
		byName[d.Name] = d
	}
	for _, dir := range cfg.Dirs {
		ds, err := LoadDir(dir)
		if err != nil {
			errs = append(errs, err)
		}
		for _, d := range ds {
			if prev, ok := byName[d.Name]; ok {
				errs = append(errs, &LoadError{File: d.File, Line: 1, Msg: fmt.Sprintf("detector %s is already defined in %s", d.Name, prev.File)})
				continue
			}
			byName[d.Name] = d
			all = append(all, d)
		}
	}
	// audit rules share the config: naming one here is not an error
	others := map[string]bool{}
	if au, err := AuditDetectors(); err == nil {
		for _, d := range au {
			others[d.Name] = true
		}
	}
	s, cerrs := applyConfig(all, byName, cfg, others)
	return s, errors.Join(append(errs, cerrs...)...)
}

// applyConfig builds a Set from all: cfg's disable list and threshold
// overrides applied, every unknown name or threshold reported with its key
// path. Names in others (the other family of detectors, which shares the
// config) are skipped without error.
func applyConfig(all []*Detector, byName map[string]*Detector, cfg Config, others map[string]bool) (*Set, []error) {
	var errs []error
	disabled := map[string]bool{}
	for i, n := range cfg.Disable {
		if _, ok := byName[n]; !ok && !others[n] {
			errs = append(errs, fmt.Errorf("detectors.disable[%d]: no detector or audit rule named %q", i, n))
		}
		disabled[n] = true
	}
	for _, dn := range sortedKeys(cfg.Thresholds) {
		d, ok := byName[dn]
		if !ok {
			if !others[dn] {
				errs = append(errs, fmt.Errorf("detectors.thresholds.%s: no detector or audit rule named %q", dn, dn))
			}
			continue
		}
		for _, pn := range sortedKeys(cfg.Thresholds[dn]) {
			found := false
			for i := range d.Params {
				if d.Params[i].Name == pn {
					d.Params[i].Value = cfg.Thresholds[dn][pn]
					found = true
				}
			}
			if !found {
				errs = append(errs, fmt.Errorf("detectors.thresholds.%s.%s: %s has no threshold %q (it has: %s)", dn, pn, dn, pn, paramNames(d)))
			}
		}
	}
	s := &Set{Config: cfg}
	for _, d := range all {
		d.causes = cfg.Causes.orDefaults()
		if !disabled[d.Name] {
			s.Detectors = append(s.Detectors, d)
		}
	}
	return s, errs
}

func paramNames(d *Detector) string {
	if len(d.Params) == 0 {
		return "none"
	}
	var n []string
	for _, p := range d.Params {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
