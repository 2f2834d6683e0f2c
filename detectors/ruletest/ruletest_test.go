package ruletest

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/trainscope/trainscope/detectors"
)

var (
	suiteOnce sync.Once
	suite     *Suite
	suiteErr  error
)

func testSuite(t *testing.T) *Suite {
	t.Helper()
	suiteOnce.Do(func() { suite, suiteErr = NewSuite(context.Background(), detectors.Config{}) })
	if suiteErr != nil {
		t.Fatal(suiteErr)
	}
	return suite
}

func ptr[T any](v T) *T { return &v }

// A wrong expectation is a mismatch that names what differs; a finding
// nobody expected is one too.
func TestCompareFindingsReportsMismatches(t *testing.T) {
	got := []Finding{
		{Run: DefaultRun, Detector: "hang", Severity: "critical", Rank: ptr(1), StepLo: ptr(2), Metric: "stall_ns", Value: ptr(2.4998e9), Message: "rank 1 stopped"},
		{Run: DefaultRun, Detector: "hang", Severity: "critical", Rank: ptr(3), Metric: "stall_ns", Value: ptr(1.5e9), Message: "rank 3 stopped"},
	}
	want := []WantFinding{{Line: 7, Detector: "hang", Rank: ptr(1), StepLo: ptr(2), Value: ptr(2.5e9), Tol: tolerance{abs: 1e5}, Message: []string{"rank 1 hung"}}}
	p := CompareFindings(want, got)
	if len(p) != 3 {
		t.Fatalf("problems %q, want rank 1's finding missing and both actual ones unexpected", p)
	}
	for _, s := range []string{"missing: hang rank=1 step=2 value=2.5e+09 ±100000", "(line 7)", "nearest: hang critical rank=1 step=2",
		"value: want 2.5e+09 ±100000, got 2.4998e+09", `message lacks "rank 1 hung"`} {
		if !strings.Contains(p[0], s) {
			t.Errorf("missing-finding report lacks %q:\n%s", s, p[0])
		}
	}
	if !strings.HasPrefix(p[1], "unexpected: hang critical rank=1 step=2 stall_ns=2.4998e+09") || !strings.HasPrefix(p[2], "unexpected: hang critical rank=3 stall_ns=1.5e+09") {
		t.Errorf("problems %q, want ranks 1 and 3 unexpected", p[1:])
	}
	// within tolerance, the right message: no problem
	want[0].Value, want[0].Message = ptr(2.4999e9), []string{"rank 1 stopped"}
	want = append(want, WantFinding{Detector: "hang", Rank: ptr(3)})
	if p := CompareFindings(want, got); p != nil {
		t.Errorf("matching findings reported: %q", p)
	}
	// relative tolerance
	want[0].Value, want[0].Tol = ptr(2.5e9), tolerance{rel: 0.001}
	if p := CompareFindings(want, got); p != nil {
		t.Errorf("0.08%% off with a 0.1%% tolerance: %q", p)
	}
}

// Each finding answers one expectation: two expectations that one finding
// satisfies leave one missing; matching is not greedy (the loose
// expectation must not take the finding the strict one needs).
func TestCompareFindingsPairsOneToOne(t *testing.T) {
	got := []Finding{
		{Detector: "slow_rank", Rank: ptr(3), Metric: "m", Value: ptr(0.5)},
		{Detector: "slow_rank", Rank: ptr(5), Metric: "m", Value: ptr(0.2)},
	}
	loose, strict := WantFinding{Detector: "slow_rank"}, WantFinding{Detector: "slow_rank", Rank: ptr(3)}
	if p := CompareFindings([]WantFinding{loose, strict}, got); p != nil {
		t.Errorf("loose then strict: %q", p)
	}
	p := CompareFindings([]WantFinding{strict, strict}, got)
	if len(p) != 2 || !strings.Contains(p[0], "another expectation took it") || !strings.HasPrefix(p[1], "unexpected: slow_rank") {
		t.Errorf("one finding for two expectations: %q", p)
	}
	if p := CompareFindings(nil, nil); p != nil {
		t.Errorf("nothing against nothing: %q", p)
	}
}

func TestCompareMetrics(t *testing.T) {
	got := []MetricRow{{Run: DefaultRun, Detector: "kernel_speed", Rank: ptr(3), Metric: "slowdown", Value: ptr(1.5)}}
	if p := CompareMetrics([]WantMetric{{Detector: "kernel_speed", Rank: ptr(3), Metric: "slowdown", Value: 1.49, Tol: tolerance{abs: 0.02}}}, got); p != nil {
		t.Errorf("within tolerance: %q", p)
	}
	p := CompareMetrics([]WantMetric{{Detector: "kernel_speed", Rank: ptr(3), Metric: "slowdown", Value: 1.2}}, got)
	if len(p) != 1 || !strings.Contains(p[0], "missing metric: kernel_speed rank=3 slowdown=1.2") || !strings.Contains(p[0], "got: kernel_speed rank=3 slowdown=1.5") {
		t.Errorf("wrong value: %q", p)
	}
}

// A fixture whose expectation is wrong fails when run, and its report
// shows the expected against the actual finding.
func TestRunFailsOnAWrongExpectation(t *testing.T) {
	s := testSuite(t)
	f, err := s.Parse("wrong.yaml", []byte(`detectors: [mem_reserved_unused]
tables:
  mem_segments:
    - {rank: 0, host: h, device: 0, address: 0, total_size: 4GiB, allocated_size: 1GiB, active_size: 0, requested_size: 0,
       stream: 0, segment_type: large, pool: default, is_expandable: false, blocks: 1}
cases:
  - name: right
    expect:
      findings: [{rank: 0, value: 0.75}]
  - name: wrong value
    expect:
      findings: [{rank: 0, value: 0.5}]
  - name: wrongly quiet
    expect:
      no_findings: [mem_reserved_unused]
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].Failed() || !res[1].Failed() || !res[2].Failed() {
		t.Fatalf("results %+v: want the first case to pass, the others to fail", res)
	}
	rep := res[1].Report()
	for _, s := range []string{"wrong.yaml:10: wrong value: 2 problem(s)", "missing: mem_reserved_unused rank=0 value=0.5 (line 12)",
		"value: want 0.5, got 0.75", "unexpected: mem_reserved_unused warn rank=0", "expected findings:", "got findings:"} {
		if !strings.Contains(rep, s) {
			t.Errorf("report lacks %q:\n%s", s, rep)
		}
	}
	if rep := res[2].Report(); !strings.Contains(rep, "unexpected: mem_reserved_unused") || !strings.Contains(rep, "expected findings:\n    (none)") {
		t.Errorf("quiet case report:\n%s", rep)
	}
}

// Loading is strict: every problem, with file:line.
func TestParseErrors(t *testing.T) {
	s := testSuite(t)
	const head = "detectors: [hang]\n"
	for _, c := range []struct {
		name, text, want string
	}{
		{"unknown key", head + "cases: []\nexpectations: {}\n", `bad.yaml:3: unknown key "expectations" in the file`},
		{"unknown detector", "detectors: [hangs]\ncases: [{expect: {}}]\n", `bad.yaml:1: no detector or audit rule named "hangs"`},
		{"mixed kinds", "detectors: [hang, r_p05]\ncases: [{expect: {}}]\n", "bad.yaml:1: detectors mixes trace detectors and config-audit rules"},
		{"unknown table", head + "tables:\n  slicez: []\ncases: [{expect: {}}]\n", `bad.yaml:3: no table named "slicez"`},
		{"output table", head + "tables:\n  findings: []\ncases: [{expect: {}}]\n", "bad.yaml:3: rows cannot be given for findings"},
		{"unknown column", head + "tables:\n  steps:\n    - {rank: 0, step: 1, start_ns: 0, end_ns: 1, stop_ns: 2}\ncases: [{expect: {}}]\n",
			`bad.yaml:4: table steps has no column "stop_ns"`},
		{"not null", head + "tables:\n  steps:\n    - {rank: 0, step: 1, start_ns: 0}\ncases: [{expect: {}}]\n", "bad.yaml:4: a row of steps needs end_ns"},
		{"bad number", head + "tables:\n  steps:\n    - {rank: 0, step: 1, start_ns: 0, end_ns: 3 weeks}\ncases: [{expect: {}}]\n",
			`bad.yaml:4: steps.end_ns: "3 weeks" is not a number`},
		{"fraction in an integer", head + "tables:\n  steps:\n    - {rank: 0.5, step: 1, start_ns: 0, end_ns: 1}\ncases: [{expect: {}}]\n",
			"bad.yaml:4: steps.rank: rank (INTEGER) is a whole number"},
		{"short row", head + "tables:\n  steps:\n    columns: [rank, step]\n    rows:\n      - [0]\ncases: [{expect: {}}]\n",
			"bad.yaml:6: a row of steps has 1 values for 2 columns"},
		{"unknown threshold", head + "cases:\n  - thresholds: {hang: {min_stall: 1s}}\n    expect: {}\n", `bad.yaml:3: hang has no threshold "min_stall" (it has: min_stall_ns)`},
		{"finding of another detector", head + "cases:\n  - expect:\n      findings: [{detector: slow_rank}]\n",
			"bad.yaml:4: finding of slow_rank: it is not among the detectors under test (hang)"},
		{"unknown finding key", head + "cases:\n  - expect:\n      findings:\n        - {rank: 1, step: 2, stall: 3}\n",
			`bad.yaml:5: unknown key "stall" in an expected finding`},
		{"no cases", head, "bad.yaml:1: missing cases"},
		{"half a window", head + "cases:\n  - window: {step_lo: 1}\n    expect: {}\n", "bad.yaml:3: window needs step_lo and step_hi"},
	} {
		_, err := s.Parse("bad.yaml", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// Units: times in ns, sizes in bytes, plain numbers as they are.
func TestNumbersWithUnits(t *testing.T) {
	s := testSuite(t)
	f, err := s.Parse("units.yaml", []byte(`detectors: [hang]
tables:
  steps:
    - {rank: 0, step: 1, start_ns: 1.5ms, end_ns: 2s}
  mem_segments:
    - {rank: 0, host: h, device: 0, address: 0x10, total_size: 2GiB, allocated_size: 1_000, active_size: 1KB, requested_size: 0,
       stream: 0, segment_type: large, pool: default, is_expandable: false, blocks: 1}
cases: [{expect: {}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	for _, rs := range f.Tables {
		for i, c := range rs.Rows[0].Cols {
			vals[rs.Table+"."+c] = rs.Rows[0].Vals[i]
		}
	}
	for k, want := range map[string]any{"steps.start_ns": int64(1_500_000), "steps.end_ns": int64(2_000_000_000), "steps.run_id": DefaultRun,
		"mem_segments.address": int64(16), "mem_segments.total_size": int64(2 << 30), "mem_segments.allocated_size": int64(1000),
		"mem_segments.active_size": int64(1000), "mem_segments.is_expandable": false} {
		if vals[k] != want {
			t.Errorf("%s = %#v, want %#v", k, vals[k], want)
		}
	}
}

// The example in detectors/README.md loads and passes.
func TestReadmeExample(t *testing.T) {
	s := testSuite(t)
	text, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(text), "## Rule tests")
	_, block, ok2 := strings.Cut(sec, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no yaml example under ## Rule tests")
	}
	f, err := s.Parse("README.md example", []byte(block))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Failed() {
			t.Error(r.Report())
		}
	}
	if len(res) != 2 {
		t.Errorf("%d cases, want 2", len(res))
	}
}
