package detectors_test

import (
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/internal/testkit"
	"github.com/trainscope/trainscope/sql/duck"
)

// The trace builder, the hand run and the analysis helpers live in
// testkit, which the split packages' tests share; these are their names
// here.
type traceBuilder = testkit.Trace

const (
	allReduce = testkit.AllReduce
	gemm      = testkit.Gemm
)

var (
	newTrace      = testkit.NewTrace
	ncclArgs      = testkit.NCCLArgs
	lowThresholds = testkit.LowThresholds
)

func handRun(t *testing.T) string { return testkit.HandRun(t) }

func loadRuns(t *testing.T, runs map[string]string) *duck.Store { return testkit.LoadRuns(t, runs) }

func analyzeDir(t *testing.T, dir, runID string, w detectors.Window, cfg ...detectors.Config) (*duck.Store, []detectors.Result) {
	t.Helper()
	return testkit.AnalyzeDir(t, dir, runID, w, cfg...)
}

func runDetectors(t *testing.T, st *duck.Store, w detectors.Window, cfg ...detectors.Config) []detectors.Result {
	t.Helper()
	return testkit.RunDetectors(t, st, w, cfg...)
}

// uniq returns a short string that differs per test, for run ids.
func uniq(t *testing.T) string {
	return strings.ReplaceAll(strings.ToLower(t.Name()), "/", "_")
}
