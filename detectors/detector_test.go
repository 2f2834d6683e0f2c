package detectors

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors/report"
)

const goodHeader = `-- name: sample
-- category: test
-- kind: finding
-- severity: warn
-- description: a sample detector
-- threshold: min_ratio = 0.1  # what it means
SELECT 'r' AS run_id, 'm' AS metric, 1.0 AS value, 'msg' AS message WHERE 1 > $min_ratio
`

func TestParseGood(t *testing.T) {
	d, err := Parse("x/sample.sql", []byte(goodHeader))
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "sample" || d.Kind != KindFinding || d.Severity != "warn" || d.Category != "test" {
		t.Errorf("header = %+v", d)
	}
	if len(d.Params) != 1 || d.Params[0].Name != "min_ratio" || d.Params[0].Default != 0.1 || d.Params[0].Doc != "what it means" || d.Params[0].Line != 6 {
		t.Errorf("params = %+v", d.Params)
	}
	if d.Line != 7 || !strings.HasPrefix(d.SQL, "SELECT") {
		t.Errorf("body at line %d: %q", d.Line, d.SQL)
	}
	roles := strings.Replace(goodHeader, "-- severity: warn", "-- cause: hang\n-- shows: compute , sync\n-- symptom: idle\n-- evidence: hang, late_rank", 1)
	d, err = Parse("x/sample.sql", []byte(roles))
	if err != nil {
		t.Fatal(err)
	}
	if d.Cause != "hang" || strings.Join(d.Shows, ",") != "compute,sync" || d.Symptom != "idle" || strings.Join(d.Evidence, ",") != "hang,late_rank" {
		t.Errorf("roles: cause %q shows %q symptom %q evidence %q", d.Cause, d.Shows, d.Symptom, d.Evidence)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, file, text, want string
	}{
		{"unknown key", "sample.sql", strings.Replace(goodHeader, "-- severity: warn", "-- severty: warn", 1), "sample.sql:4: unknown header key \"severty\""},
		{"name differs", "other.sql", goodHeader, "other.sql:1: name \"sample\" differs from the file name \"other.sql\""},
		{"undeclared parameter", "sample.sql", strings.Replace(goodHeader, "$min_ratio", "$max_ratio", 1), "sample.sql:7: parameter $max_ratio is not declared"},
		{"unused threshold", "sample.sql", strings.Replace(goodHeader, "WHERE 1 > $min_ratio", "", 1), "sample.sql:6: threshold min_ratio is declared but the SQL never uses $min_ratio"},
		{"two statements", "sample.sql", goodHeader + "; DROP TABLE slices\n", "sample.sql:8: a detector is one SQL statement"},
		{"bad kind", "sample.sql", strings.Replace(goodHeader, "kind: finding", "kind: alert", 1), "sample.sql:3: kind \"alert\" must be metric or finding"},
		{"bad severity", "sample.sql", strings.Replace(goodHeader, "severity: warn", "severity: high", 1), "sample.sql:4: severity \"high\" must be one of info, warn, critical"},
		{"bad threshold", "sample.sql", strings.Replace(goodHeader, "min_ratio = 0.1", "min_ratio = ten", 1), "sample.sql:6: threshold must be 'name = number"},
		{"duplicate key", "sample.sql", strings.Replace(goodHeader, "-- kind: finding", "-- kind: finding\n-- kind: metric", 1), "sample.sql:4: kind given twice (first at line 3)"},
		{"missing name", "sample.sql", strings.Replace(goodHeader, "-- name: sample\n", "", 1), "sample.sql:1: missing '-- name:' header"},
		{"no body", "sample.sql", "-- name: sample\n-- category: c\n-- kind: metric\n-- description: d\n", "no SQL after the header"},
		{"bad order", "sample.sql", strings.Replace(goodHeader, "kind: finding", "kind: metric\n-- order: first", 1), "sample.sql:4: order \"first\" must be a whole number above 0"},
		{"order on a finding", "sample.sql", strings.Replace(goodHeader, "-- severity: warn", "-- order: 5", 1), "sample.sql:4: order places a metric's table in the report"},
		{"unknown cause", "sample.sql", strings.Replace(goodHeader, "-- severity: warn", "-- cause: slow_disk", 1), "sample.sql:4: cause \"slow_disk\" must be one of hang, slow_link"},
		{"unknown shows", "sample.sql", strings.Replace(goodHeader, "-- severity: warn", "-- shows: compute, weather", 1), "sample.sql:4: shows \"weather\" must be a kind of cause"},
		{"bad symptom", "sample.sql", strings.Replace(goodHeader, "-- severity: warn", "-- symptom: fever", 1), "sample.sql:4: symptom \"fever\" must be one of idle, transfer"},
		{"unknown evidence", "sample.sql", strings.Replace(goodHeader, "-- severity: warn", "-- evidence: hang, slow_disk", 1), "sample.sql:4: evidence \"slow_disk\" must be a kind of cause (late_rank, slow_host, hang)"},
		{"evidence not a list", "sample.sql", strings.Replace(goodHeader, "-- severity: warn", "-- evidence: hang;", 1), "sample.sql:4: evidence must be a comma-separated list"},
		{"evidence on a metric", "sample.sql", strings.Replace(goodHeader, "kind: finding", "kind: metric\n-- evidence: hang", 1), "sample.sql:4: evidence places findings in the cause graph; a metric detector has none"},
		{"role on a metric", "sample.sql", strings.Replace(goodHeader, "kind: finding", "kind: metric\n-- symptom: idle", 1), "sample.sql:4: symptom places findings in the cause graph; a metric detector has none"},
		{"free text in header", "sample.sql", "-- name: sample\n-- this is prose\n", "sample.sql:2: header line must be '-- key: value'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.file, []byte(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestParseIgnoresDollarInStringsAndComments(t *testing.T) {
	text := strings.Replace(goodHeader, "'msg' AS message", "'costs $5' AS message -- not a $param\n", 1)
	if _, err := Parse("sample.sql", []byte(text)); err != nil {
		t.Fatal(err)
	}
}

func TestBuiltinsLoad(t *testing.T) {
	ds, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) < 10 {
		t.Fatalf("only %d built-in detectors", len(ds))
	}
	for _, d := range ds {
		if !d.Builtin || d.Description == "" {
			t.Errorf("%s: builtin=%v description=%q", d.Name, d.Builtin, d.Description)
		}
	}
}

func TestNewSetOverridesAndErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sample.sql"), []byte(goodHeader), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(Config{
		Dirs:       []string{dir},
		Disable:    []string{"top_kernels"},
		Thresholds: map[string]map[string]float64{"sample": {"min_ratio": 0.5}, "idle_breakdown": {"kernel_wait_ns": 5000}},
	})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]*Detector{}
	for _, d := range set.Detectors {
		found[d.Name] = d
	}
	if found["top_kernels"] != nil {
		t.Error("disabled detector still in the set")
	}
	if d := found["sample"]; d == nil || d.Builtin || d.Params[0].Value != 0.5 || d.Params[0].Default != 0.1 {
		t.Errorf("user detector = %+v", d)
	}
	if d := found["idle_breakdown"]; d == nil || d.Params[0].Value != 5000 {
		t.Errorf("override of a built-in threshold not applied: %+v", d)
	}

	_, err = NewSet(Config{
		Disable:    []string{"nope"},
		Thresholds: map[string]map[string]float64{"gpu_idle": {"max_idle": 1}, "ghost": {"x": 1}},
	})
	for _, want := range []string{
		`detectors.disable[0]: no detector or audit rule named "nope"`,
		`detectors.thresholds.gpu_idle.max_idle: gpu_idle has no threshold "max_idle" (it has: max_idle_ratio)`,
		`detectors.thresholds.ghost: no detector or audit rule named "ghost"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v, want it to contain %q", err, want)
		}
	}

	// A user detector may not shadow a built-in.
	shadow := strings.ReplaceAll(goodHeader, "sample", "gpu_idle")
	if err := os.WriteFile(filepath.Join(dir, "gpu_idle.sql"), []byte(shadow), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSet(Config{Dirs: []string{dir}}); err == nil || !strings.Contains(err.Error(), "already defined in detectors/sql/gpu_idle.sql") {
		t.Errorf("shadowing error = %v", err)
	}
}

// Trace detectors and audit rules share one config: each set accepts the
// other's names, and still checks its own.
func TestSharedConfigAcrossSets(t *testing.T) {
	cfg := Config{Thresholds: map[string]map[string]float64{
		"r_m04":    {"min_fraction": 0.5},
		"gpu_idle": {"max_idle_ratio": 0.3},
	}}
	if _, err := NewSet(cfg); err != nil {
		t.Errorf("trace set refused an audit rule's threshold: %v", err)
	}
	if _, err := NewAuditSet(cfg); err != nil {
		t.Errorf("audit set refused a trace detector's threshold: %v", err)
	}
	cfg.Thresholds["r_m04"] = map[string]float64{"nope": 1}
	if _, err := NewAuditSet(cfg); err == nil || !strings.Contains(err.Error(), `thresholds.r_m04.nope`) {
		t.Errorf("audit set accepted an unknown threshold: %v", err)
	}
}

// The severity header takes the severities the report ranks findings by.
func TestSeveritiesAreTheReports(t *testing.T) {
	if !slices.Equal(Severities, report.Severities) {
		t.Errorf("detectors.Severities %v, report.Severities %v", Severities, report.Severities)
	}
}
