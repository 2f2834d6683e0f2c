package detectors

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestRolesEvidence pins the built-in detectors whose findings are
// evidence for causes (their evidence header): the GPU counters explain a
// late rank (gpu_throttle), a slow host (gpu_throttle, gpu_clock_cap) and
// a hang (gpu_xid). Package causes reads the header, never these names, so
// a header that loses its evidence key loses the explanation silently;
// this test says so instead.
func TestRolesEvidence(t *testing.T) {
	const want = "gpu_clock_cap: slow_host; gpu_throttle: late_rank, slow_host; gpu_xid: hang"
	roles := roleIndex(nil)
	var got []string
	for _, name := range slices.Sorted(maps.Keys(builtinIndex())) {
		if ev := builtinIndex()[name].Evidence; len(ev) > 0 {
			got = append(got, fmt.Sprintf("%s: %s", name, strings.Join(ev, ", ")))
			if !slices.Equal(roles[name].Evidence, ev) {
				t.Errorf("%s: role evidence %v, header %v", name, roles[name].Evidence, ev)
			}
		}
	}
	if g := strings.Join(got, "; "); g != want {
		t.Errorf("evidence headers:\n%s\nwant:\n%s", g, want)
	}
}
