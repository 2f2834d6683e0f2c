package gpu

import (
	"sort"
	"strings"
)

// Spec is one GPU model's datasheet figures. TFLOP/s are dense (no 2:4
// sparsity) tensor-core peaks at boost clock; 0 means the format is not
// supported on tensor cores. Bandwidths are per GPU.
type Spec struct {
	Key       string  // catalog key, e.g. "H100-SXM"
	Name      string  // marketing name
	Vendor    string  // NVIDIA, AMD
	MemGiB    float64 // device memory
	HBMGBs    float64 // memory bandwidth, GB/s
	LinkGBs   float64 // GPU-GPU link (NVLink / Infinity Fabric), total GB/s per GPU; 0 = PCIe only
	BF16      float64 // TFLOP/s
	FP16      float64
	FP8       float64
	TF32      float64
	FP32      float64  // non-tensor FP32
	MatchName []string // lowercase substrings of deviceProperties.name that identify it, most specific first
}

// Catalog lists the GPUs trainscope knows, from the vendors' datasheets
// (dense figures; NVIDIA's sparse figures are twice these).
var Catalog = []Spec{
	{Key: "B200", Name: "NVIDIA B200", Vendor: "NVIDIA", MemGiB: 180, HBMGBs: 8000, LinkGBs: 1800,
		BF16: 2250, FP16: 2250, FP8: 4500, TF32: 1100, FP32: 75, MatchName: []string{"b200"}},
	{Key: "H200", Name: "NVIDIA H200 SXM", Vendor: "NVIDIA", MemGiB: 141, HBMGBs: 4800, LinkGBs: 900,
		BF16: 989.4, FP16: 989.4, FP8: 1978.9, TF32: 494.7, FP32: 66.9, MatchName: []string{"h200"}},
	{Key: "H100-SXM", Name: "NVIDIA H100 SXM5 80GB", Vendor: "NVIDIA", MemGiB: 80, HBMGBs: 3350, LinkGBs: 900,
		BF16: 989.4, FP16: 989.4, FP8: 1978.9, TF32: 494.7, FP32: 66.9, MatchName: []string{"h100 80gb hbm3", "h100 sxm", "h100-80g", "h100-sxm"}},
	{Key: "H100-PCIe", Name: "NVIDIA H100 PCIe 80GB", Vendor: "NVIDIA", MemGiB: 80, HBMGBs: 2000, LinkGBs: 600,
		BF16: 756.5, FP16: 756.5, FP8: 1513, TF32: 378, FP32: 51.2, MatchName: []string{"h100 pcie"}},
	{Key: "H800", Name: "NVIDIA H800 SXM5 80GB", Vendor: "NVIDIA", MemGiB: 80, HBMGBs: 3350, LinkGBs: 400,
		BF16: 989.4, FP16: 989.4, FP8: 1978.9, TF32: 494.7, FP32: 66.9, MatchName: []string{"h800"}},
	{Key: "H20", Name: "NVIDIA H20 96GB", Vendor: "NVIDIA", MemGiB: 96, HBMGBs: 4000, LinkGBs: 900,
		BF16: 148, FP16: 148, FP8: 296, TF32: 74, FP32: 44, MatchName: []string{"h20"}},
	{Key: "A100-80G", Name: "NVIDIA A100 SXM4 80GB", Vendor: "NVIDIA", MemGiB: 80, HBMGBs: 2039, LinkGBs: 600,
		BF16: 312, FP16: 312, TF32: 156, FP32: 19.5, MatchName: []string{"a100-sxm4-80gb", "a100 80gb", "a100-80gb", "a100-pcie-80gb"}},
	{Key: "A100-40G", Name: "NVIDIA A100 SXM4 40GB", Vendor: "NVIDIA", MemGiB: 40, HBMGBs: 1555, LinkGBs: 600,
		BF16: 312, FP16: 312, TF32: 156, FP32: 19.5, MatchName: []string{"a100-sxm4-40gb", "a100-pcie-40gb", "a100 40gb", "a100"}},
	{Key: "L4", Name: "NVIDIA L4", Vendor: "NVIDIA", MemGiB: 24, HBMGBs: 300,
		BF16: 121, FP16: 121, FP8: 242.5, TF32: 60, FP32: 30.3, MatchName: []string{" l4"}},
	{Key: "V100", Name: "NVIDIA V100 SXM2", Vendor: "NVIDIA", MemGiB: 32, HBMGBs: 900, LinkGBs: 300,
		FP16: 125, FP32: 15.7, MatchName: []string{"v100"}},
	{Key: "MI300X", Name: "AMD Instinct MI300X", Vendor: "AMD", MemGiB: 192, HBMGBs: 5300, LinkGBs: 896,
		BF16: 1307.4, FP16: 1307.4, FP8: 2614.9, TF32: 653.7, FP32: 163.4, MatchName: []string{"mi300x"}},
}

// Lookup finds the catalog entry for a device name as traces report it
// ("NVIDIA H100 80GB HBM3", "AMD Instinct MI300X") or a catalog key
// ("H100-SXM", "h20-96g"); ok is false for an unknown GPU.
func Lookup(name string) (Spec, bool) {
	low := " " + strings.ToLower(strings.TrimSpace(name))
	for _, s := range Catalog {
		if strings.EqualFold(strings.TrimSpace(name), s.Key) {
			return s, true
		}
	}
	for _, s := range Catalog {
		if k := strings.ToLower(s.Key); strings.HasPrefix(strings.TrimSpace(low), k+"-") {
			return s, true
		}
	}
	for _, s := range Catalog {
		for _, m := range s.MatchName {
			if strings.Contains(low, m) {
				return s, true
			}
		}
	}
	return Spec{}, false
}

// Keys lists the catalog keys, sorted.
func Keys() []string {
	out := make([]string, len(Catalog))
	for i, s := range Catalog {
		out[i] = s.Key
	}
	sort.Strings(out)
	return out
}

// PeakTFLOPS returns the dense tensor peak for a dtype name as Kineto and
// configs spell it (bf16, bfloat16, fp16, half, float16, fp8, tf32,
// fp32, float); 0 when the GPU has none.
func (s Spec) PeakTFLOPS(dtype string) float64 {
	switch strings.ToLower(dtype) {
	case "bf16", "bfloat16":
		return s.BF16
	case "fp16", "half", "float16":
		return s.FP16
	case "fp8", "float8", "e4m3", "e5m2":
		return s.FP8
	case "tf32":
		return s.TF32
	case "fp32", "float", "float32":
		return s.FP32
	}
	return 0
}
