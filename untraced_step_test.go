package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// analyze --untraced-step on a real H100 trace (testdata/gpu-h100): the
// healthy transformer, traced at 57 ms a step, took 19-60 ms untraced
// (median 25 ms) against 27 ms of GPU work. Given the untraced step, the
// profiler's cost comes off the host-side causes and none is left.
func TestUntracedStep(t *testing.T) {
	if testing.Short() {
		t.Skip("analyses a real trace twice")
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "gpu-h100", "untraced-timings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var steps map[string][]float64
	if err := json.Unmarshal(raw, &steps); err != nil {
		t.Fatal(err)
	}
	ms := slices.Sorted(slices.Values(steps["healthy"]))
	untraced := time.Duration((ms[len(ms)/2-1] + ms[len(ms)/2]) / 2 * float64(time.Millisecond))
	dir := filepath.Join("testdata", "gpu-h100", "healthy")
	headline := func(args ...string) (string, string) {
		code, out, errOut := trainscope(t, append([]string{"analyze", dir, "-q"}, args...)...)
		if code != 0 {
			t.Fatalf("analyze %v: exit %d: %s", args, code, errOut)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "**") {
				return line, out
			}
		}
		t.Fatalf("analyze %v: no verdict line in\n%s", args, out)
		return "", ""
	}
	// without it, what is left of the launch idle after 2 us an event is
	// taken off the profiler could still be all of: the cause is listed
	// after memory-bound work, and says so
	estimated, out := headline()
	if strings.Contains(estimated, "kernel launches") {
		t.Errorf("estimated: the verdict blames launches: %s", estimated)
	}
	if !strings.Contains(out, "could be nearly all the profiler's") {
		t.Errorf("estimated: no cause says the profiler could be all of it:\n%s", out)
	}
	given, out := headline("--untraced-step", untraced.String())
	if strings.Contains(given, "kernel launches") || strings.Contains(given, "Host work holds") {
		t.Errorf("--untraced-step %s: the verdict still blames the host: %s", untraced, given)
	}
	if strings.Contains(out, "launch-bound") || strings.Contains(out, "host-bound") {
		t.Errorf("--untraced-step %s: a host-side root cause is left:\n%s", untraced, out)
	}
}
