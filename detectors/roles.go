package detectors

import (
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/trainscope/trainscope/detectors/report"
)

// A detector's place in the cause graph is in its header:
//
//   - cause: its findings are root causes, costed by the named model
//     (causeModels): a hang, a slow link, a link off NVLink (pcie_path), a
//     slow kernel, memory-bound work, a slow host.
//   - shows: what its finding on a cause's own rank shows of that cause:
//     a kind of cause (hang, slow_host) or a reason a rank was late or its
//     GPU waited (causeReasons; any: every reason). A detector shows the
//     cause it makes.
//   - symptom: its findings are what a cause looks like from outside, and
//     the cause explains them: idle (a rank's GPU idles or computes less:
//     explained by the rank it waited for, a hang elsewhere, or its own
//     host-side lateness) or transfer (exposed communication: explained by
//     a slow link under it, or a hang).
//   - evidence: the kinds of cause its findings are evidence for
//     (evidenceKinds): a finding on a cause's rank (one without a rank: on
//     the ranks its subject names) is read into the cause. On a late rank
//     (or its one-off stall) late for its compute, the finding makes the
//     reason it shows the cause's why, with its fix; on a slow host it is a
//     line of evidence; on a hung rank it names the error in the headline,
//     and its fix comes first.

// causeModels are the values of a cause header: how a finding becomes a
// root cause (package causes: findingCauses, mergeSlowHost).
var causeModels = []string{report.KindHang, report.KindSlowLink, "pcie_path", "slow_kernel", "memory_bound", report.KindSlowHost}

// causeReasons are why a rank was late or its GPU waited (Cause.Why), as a
// shows header names them; any stands for every one.
var causeReasons = []string{"any", "data_loader", "compute", "throttle", "sync", "launch", "copies", "gc", "checkpoint",
	"host", "input", "fp32"}

// symptomKinds are the values of a symptom header.
var symptomKinds = []string{"idle", "transfer"}

// evidenceKinds are the values of an evidence header: the kinds of cause
// a finding's evidence is read into (package causes: hardwareCauses,
// lateCauses); late_rank stands for a late rank's one-off stall too.
var evidenceKinds = []string{"late_rank", report.KindSlowHost, report.KindHang}

var wordList = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\s*,\s*[a-z_][a-z0-9_]*)*$`)

// parseRole reads the cause, shows, symptom and evidence header keys; ok
// is false for any other key.
func parseRole(d *Detector, key, val string, fail func(string, ...any)) (ok bool) {
	switch key {
	case "cause":
		if !slices.Contains(causeModels, val) {
			fail("cause %q must be one of %s", val, strings.Join(causeModels, ", "))
		}
		d.Cause = val
	case "shows":
		for _, w := range words(key, val, fail) {
			if w != report.KindHang && w != report.KindSlowHost && !slices.Contains(causeReasons, w) {
				fail("shows %q must be a kind of cause (%s, %s) or a reason (%s)", w, report.KindHang, report.KindSlowHost, strings.Join(causeReasons, ", "))
				continue
			}
			d.Shows = append(d.Shows, w)
		}
	case "evidence":
		for _, w := range words(key, val, fail) {
			if !slices.Contains(evidenceKinds, w) {
				fail("evidence %q must be a kind of cause (%s)", w, strings.Join(evidenceKinds, ", "))
				continue
			}
			d.Evidence = append(d.Evidence, w)
		}
	case "symptom":
		if !slices.Contains(symptomKinds, val) {
			fail("symptom %q must be one of %s", val, strings.Join(symptomKinds, ", "))
		}
		d.Symptom = val
	default:
		return false
	}
	return true
}

// words splits a header's comma-separated list; a value that is not one
// fails and yields none.
func words(key, val string, fail func(string, ...any)) []string {
	if !wordList.MatchString(val) {
		fail("%s must be a comma-separated list, got %q", key, val)
		return nil
	}
	out := strings.Split(val, ",")
	for i, w := range out {
		out[i] = strings.TrimSpace(w)
	}
	return out
}

// checkRoles refuses cause-graph roles on a metric detector: only
// findings take part in the cause graph.
func checkRoles(d *Detector, seen map[string]int, fail func(int, string, ...any)) {
	if d.Kind != KindMetric {
		return
	}
	for _, k := range []string{"cause", "shows", "symptom", "evidence"} {
		if line, ok := seen[k]; ok {
			fail(line, "%s places findings in the cause graph; a metric detector has none", k)
		}
	}
}

// builtinIndex is the built-in detectors by name, parsed once: the roles
// of findings whose detector is not among a report's results.
var builtinIndex = sync.OnceValue(func() map[string]*Detector {
	ds, _ := Builtin()
	out := map[string]*Detector{}
	for _, d := range ds {
		out[d.Name] = d
	}
	return out
})

// roleIndex is the role of every detector a report may meet, by name:
// the built-ins, overridden by the ones that produced results (a finding
// of a detector not among the results is a built-in's).
func roleIndex(results []Result) map[string]report.Role {
	out := map[string]report.Role{}
	add := func(d *Detector) {
		out[d.Name] = report.Role{Category: d.Category, Cause: d.Cause, Shows: d.Shows, Symptom: d.Symptom, Evidence: d.Evidence}
	}
	for _, d := range builtinIndex() {
		add(d)
	}
	for _, res := range results {
		if res.Detector != nil {
			add(res.Detector)
		}
	}
	return out
}
