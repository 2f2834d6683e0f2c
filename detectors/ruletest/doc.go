// Package ruletest runs rule tests: detector tests written as data, in the
// manner of `promtool test rules`. A rule-test file (YAML) names the
// detectors under test, gives the input rows of the store's tables, and
// states per case the findings those detectors must return (and no
// others), metric rows that must be among the metrics, and detectors that
// must stay quiet; a case may override thresholds and set the analysis
// window.
//
// Loading is strict: an unknown key, table, column or detector, a value
// that does not fit its column, a threshold the detector lacks are errors
// that give file:line. Running builds a fresh in-memory store per case,
// inserts the rows, runs the detectors under test (and the metric
// detectors they read) through the normal runner (detectors.Set.Run, or
// RunAudit for config-audit rules) and compares; a mismatch is reported as
// what was expected against what came out.
//
// detectors/README.md ("Rule tests") documents the format; the built-in
// detectors' rule tests are in detectors/testdata/rules.
package ruletest
