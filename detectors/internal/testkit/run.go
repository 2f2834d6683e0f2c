package testkit

import (
	"context"
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// Gemm is a Hopper BF16 GEMM kernel name.
const Gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"

// LowThresholds lets the 20-activity hand run be classified.
var LowThresholds = detectors.Config{Thresholds: map[string]map[string]float64{"bottleneck_class": {"min_kernels": 10}}}

// LoadRuns loads each folder as the run it is keyed by, in one fresh
// in-memory store (closed when the test ends), with the default window set.
func LoadRuns(t testing.TB, runs map[string]string) *duck.Store {
	t.Helper()
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for run, dir := range runs {
		files, _ := ingest.Discover([]string{dir})
		if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: run, Rank: -1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := detectors.SetWindow(ctx, st, detectors.Window{}); err != nil {
		t.Fatal(err)
	}
	return st
}

// AnalyzeDir loads a folder into a fresh in-memory store and runs every
// built-in detector over window w.
func AnalyzeDir(t testing.TB, dir, runID string, w detectors.Window, cfg ...detectors.Config) (*duck.Store, []detectors.Result) {
	t.Helper()
	st := LoadRuns(t, map[string]string{runID: dir})
	return st, RunDetectors(t, st, w, cfg...)
}

// RunDetectors runs every built-in detector (with cfg, when given) over
// window w.
func RunDetectors(t testing.TB, st *duck.Store, w detectors.Window, cfg ...detectors.Config) []detectors.Result {
	t.Helper()
	ctx := context.Background()
	var c detectors.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	set, err := detectors.NewSet(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := detectors.SetWindow(ctx, st, w); err != nil {
		t.Fatal(err)
	}
	res, err := set.Run(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
