package detectors_test

import (
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/ruletest"
)

// TestRules runs the rule tests in testdata/rules: each file gives a
// detector's input rows and the findings it must return (see "Rule tests"
// in README.md).
func TestRules(t *testing.T) {
	ruletest.TestDir(t, "testdata/rules", detectors.Config{})
}
