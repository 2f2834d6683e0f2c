package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// test-rules runs the built-in rule tests; a wrong expectation exits 1
// with the diff, a file that does not load exits 2 with file:line.
func TestTestRules(t *testing.T) {
	code, out, errOut := trainscope(t, "test-rules", filepath.Join("detectors", "testdata", "rules"))
	if code != 0 || !strings.Contains(out, " 0 failed") {
		t.Fatalf("built-in rule tests: exit %d\n%s%s", code, out, errOut)
	}
	dir := t.TempDir()
	wrong := writeFile(t, dir, "wrong.yaml", []byte(`detectors: [hang]
tables:
  ranks: [{rank: 0, host: a, source: x}, {rank: 1, host: a, source: y}]
  steps: [{rank: 0, step: 1, start_ns: 0, end_ns: 5s}, {rank: 1, step: 1, start_ns: 0, end_ns: 5s}, {rank: 0, step: 2, start_ns: 5s, end_ns: 10s}]
  slices:
    - {rank: 0, step: 2, kind: cpu_op, name: forward, pid: 1, tid: 1, ts: 5s, dur: 5s}
    - {rank: 1, step: 1, kind: cpu_op, name: forward, pid: 1, tid: 1, ts: 0, dur: 5s}
cases:
  - name: rank 1 stops after step 1
    expect: {no_findings: [hang]}
`))
	code, out, _ = trainscope(t, "test-rules", wrong)
	if code != 1 || !strings.Contains(out, "wrong.yaml:9: rank 1 stops after step 1: 1 problem(s)") || !strings.Contains(out, "unexpected: hang critical rank=1") {
		t.Errorf("wrong expectation: exit %d\n%s", code, out)
	}
	bad := writeFile(t, dir, "bad.yaml", []byte("detectors: [hang]\ncases:\n  - expect: {findings: [{rank: 1, stalled: true}]}\n"))
	if code, _, errOut := trainscope(t, "test-rules", bad); code != 2 || !strings.Contains(errOut, `bad.yaml:3: unknown key "stalled" in an expected finding`) {
		t.Errorf("bad file: exit %d, %q", code, errOut)
	}
}
