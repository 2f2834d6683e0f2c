package detectors

import (
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
	want := map[string]string{
		"gpu_throttle":  "late_rank,slow_host",
		"gpu_clock_cap": "slow_host",
		"gpu_xid":       "hang",
	}
	got := map[string]string{}
	for name, d := range builtinIndex() {
		if len(d.Evidence) > 0 {
			got[name] = strings.Join(d.Evidence, ",")
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("evidence headers = %v, want %v", got, want)
	}
	for name := range want {
		if r := roleIndex(nil)[name]; !slices.Equal(r.Evidence, builtinIndex()[name].Evidence) {
			t.Errorf("%s: role evidence %v, header %v", name, r.Evidence, builtinIndex()[name].Evidence)
		}
	}
}
