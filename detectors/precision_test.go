package detectors_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/trainscope/trainscope/bench/gpusim"
	"github.com/trainscope/trainscope/detectors"
)

// FP32 matmuls on the CUDA cores are the headline whether the kernel's
// name says so (sgemm, ffma) or not (cuBLASLt's nvjet names carry no
// dtype): then their speed, no faster than the GPU's FP32 peak, tells.
func TestPrecisionHeadline(t *testing.T) {
	raw, _ := gpusim.Trace(gpusim.Options{Scenario: gpusim.FP32, Seed: 5})
	anon := regexp.MustCompile(`sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel_cublas|ampere_sgemm_128x64_tn`).
		ReplaceAll(raw, []byte("nvjet_tst_128x128_64x4_1x2_h_bz_TNT"))
	if bytes.Equal(anon, raw) {
		t.Fatal("the simulated FP32 GEMMs were not renamed")
	}
	for name, trace := range map[string][]byte{"named": raw, "nvjet": anon} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write(trace)
			zw.Close()
			if err := os.WriteFile(filepath.Join(dir, "rank-0.pt.trace.json.gz"), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			st, res := analyzeDir(t, dir, "fp32_"+name, detectors.Window{})
			rep, err := detectors.BuildReport(context.Background(), st, res)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Headline) != 1 || rep.Headline[0].Kind != "precision" || rep.Headline[0].CostPct < 50 {
				t.Errorf("headline %+v, want FP32 matmuls costing most of the step", rep.Headline)
			}
		})
	}
}
