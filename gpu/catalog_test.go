package gpu

import (
	"math"
	"testing"
)

func TestLookup(t *testing.T) {
	cases := map[string]string{
		// names as deviceProperties report them in the corpus traces
		"NVIDIA H100 80GB HBM3": "H100-SXM",
		"NVIDIA B200":           "B200",
		"AMD Instinct MI300X":   "MI300X",
		"NVIDIA A100-SXM4-80GB": "A100-80G",
		"NVIDIA A100-PG509-200": "A100-40G",
		"Tesla V100-SXM2-32GB":  "V100",
		"NVIDIA H100 PCIe":      "H100-PCIe",
		"NVIDIA H20":            "H20",
		"NVIDIA L4":             "L4",
		"NVIDIA H800":           "H800",
		"NVIDIA H200":           "H200",
		// catalog keys and the audit flag's spelling
		"h100-sxm": "H100-SXM",
		"H20-96G":  "H20",
		"A100-80G": "A100-80G",
		"H100-80G": "H100-SXM",
	}
	for name, want := range cases {
		s, ok := Lookup(name)
		if !ok || s.Key != want {
			t.Errorf("Lookup(%q) = %q %v, want %q", name, s.Key, ok, want)
		}
	}
	for _, name := range []string{"Quadro GP100", "AMD Radeon Graphics", ""} {
		if s, ok := Lookup(name); ok {
			t.Errorf("Lookup(%q) = %q, want unknown", name, s.Key)
		}
	}
}

func TestCatalogIsConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Catalog {
		if seen[s.Key] {
			t.Errorf("duplicate key %s", s.Key)
		}
		seen[s.Key] = true
		if s.MemGiB <= 0 || s.HBMGBs <= 0 || s.FP32 <= 0 || len(s.MatchName) == 0 {
			t.Errorf("%s: incomplete entry %+v", s.Key, s)
		}
		// dense FP16 tensor throughput exceeds plain FP32 on every listed GPU
		if s.FP16 <= s.FP32 {
			t.Errorf("%s: FP16 %v <= FP32 %v", s.Key, s.FP16, s.FP32)
		}
		if s.FP8 != 0 && math.Abs(s.FP8/(2*s.BF16)-1) > 0.005 { // datasheets round
			t.Errorf("%s: FP8 %v is not twice BF16 %v", s.Key, s.FP8, s.BF16)
		}
	}
	h100, _ := Lookup("H100-SXM")
	if h100.PeakTFLOPS("bfloat16") != 989.4 || h100.PeakTFLOPS("Float") != 66.9 || h100.PeakTFLOPS("int4") != 0 {
		t.Error("PeakTFLOPS spellings")
	}
	if len(Keys()) != len(Catalog) {
		t.Error("Keys")
	}
}
