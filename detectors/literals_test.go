package detectors_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
)

// namedInGo are the only places Go under detectors/ may name a built-in
// detector in a string literal (file relative to detectors/, then names),
// each for a reason: everything else a detector is to the report (its
// table's order, the cause it makes, what it shows, the symptom it is,
// the causes it is evidence for) is in its .sql header, so adding one is
// one file. What is left is Go written against one table's columns: the
// name and the columns are one contract, and a header key would only
// move the name away from the code that reads the columns.
var namedInGo = map[string][]string{
	// cause kinds that share their name with the detector finding them,
	// declared once as constants (KindHang, KindSlowLink, KindSlowHost:
	// the values of the cause header itself), and a hang cause's title in
	// words (causeTitle) is the same word
	"report/cause.go": {"hang", "slow_link", "slow_host", "hang"},
	// the charts draw these metric tables' own columns (steps per rank,
	// the time breakdown, kernel names and times; the roofline's
	// intensity and achieved TFLOPS)
	"charts.go":          {"step_time", "temporal_breakdown", "top_kernels"},
	"charts_roofline.go": {"roofline_shapes"},
	// the memory summary line is written from mem_summary's columns
	"causes/summary.go": {"mem_summary"},
	// the precision cause is costed from matmul_precision's columns
	// (mode, ms_per_step and what it would be at TF32 and bf16)
	"causes/account_causes.go": {"matmul_precision"},
	// test support: thresholds low enough for small test traces, keyed
	// by detector as the config is
	"internal/testkit/run.go": {"bottleneck_class"},
}

// TestNoDetectorNamesInGo fails when non-test Go under detectors/ names a
// built-in detector in a string literal outside namedInGo, and when an
// entry of namedInGo is no longer needed.
func TestNoDetectorNamesInGo(t *testing.T) {
	ds, err := detectors.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, d := range ds {
		names[d.Name] = true
	}
	found := map[string][]string{}
	err = filepath.WalkDir(".", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && e.Name() == "testdata" {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(path)
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && names[s] {
				if !slices.Contains(namedInGo[rel], s) {
					t.Errorf("%s names detector %q in Go: put what it means in the detector's header (detectors/README.md, header keys), or add it to namedInGo with the reason", rel, s)
				}
				found[rel] = append(found[rel], s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range namedInGo {
		for _, s := range want {
			if !slices.Contains(found[file], s) {
				t.Errorf("namedInGo allows %s to name %q, which it no longer does: drop the entry", file, s)
			}
		}
	}
}
