package kineto

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/gpu"
)

// Modelled operators get the GPU time of the kernels launched inside them
// (through the launch's correlation id, the innermost modelled operator
// taking them), and an operator around a modelled one of the same class
// (SDPA around flash attention's own op) is not counted again.
func TestOpCosts(t *testing.T) {
	dims := `"Input Dims": [[2, 16, 1024, 64], [2, 16, 1024, 64], [2, 16, 1024, 64]], "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]`
	flash := `"Input Dims": [[2, 1024, 16, 64], [2, 1024, 16, 64], [2, 1024, 16, 64]], "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]`
	doc := `{"traceEvents": [
	 {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 0, "dur": 40, "args": {"Input Dims": [[64, 128], [256, 128]], "Input type": ["float", "float"]}},
	 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 30, "args": {"Input Dims": [[64, 128], [128, 256]], "Input type": ["float", "float"]}},
	 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"correlation": 1}},
	 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 5, "args": {"correlation": 2}},
	 {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 50, "dur": 7, "args": {"stream": 7, "correlation": 1}},
	 {"ph": "X", "cat": "kernel", "name": "splitk_reduce", "pid": 0, "tid": 7, "ts": 60, "dur": 2, "args": {"stream": 7, "correlation": 2}},
	 {"ph": "X", "cat": "cpu_op", "name": "aten::_scaled_dot_product_flash_attention", "pid": 1, "tid": 1, "ts": 100, "dur": 50, "args": {` + dims + `, "Concrete Inputs": ["", "", "", "0.", "True"]}},
	 {"ph": "X", "cat": "cpu_op", "name": "aten::_flash_attention_forward", "pid": 1, "tid": 1, "ts": 110, "dur": 30, "args": {` + flash + `, "Concrete Inputs": ["", "", "", "", "", "1024", "1024", "0.", "True", "False", ""]}},
	 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 120, "dur": 5, "args": {"correlation": 3}},
	 {"ph": "X", "cat": "kernel", "name": "flash_fwd_kernel", "pid": 0, "tid": 7, "ts": 200, "dur": 40, "args": {"stream": 7, "correlation": 3}},
	 {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 2, "ts": 0, "dur": 5, "args": {"Input Dims": [[1024], [1024]], "Input type": ["float", "float"]}}]}`
	tr, err := Read(strings.NewReader(doc), "ops.json", Options{Rank: -1})
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Slices
	type want struct {
		class         string
		flops, gpuDur int64
		kernels       int32
	}
	wants := map[string]want{
		"aten::linear": {},                                    // a composite: no model
		"aten::mm":     {"gemm", 2 * 64 * 128 * 256, 9000, 2}, // both kernels its launches made
		"aten::_scaled_dot_product_flash_attention": {}, // the flash op inside counts instead
		"aten::_flash_attention_forward":            {"attention", 4 * 2 * 16 * 1024 * 1024 * 64 / 2, 40000, 1},
		"aten::add":                                 {"elementwise", 1024, 0, 0}, // no kernel: a CPU op
	}
	for name, w := range wants {
		r := row(t, tr, name)
		class := dictAt(tr, &s.OpClass, r)
		if class == "<null>" {
			class = ""
		}
		flops, _ := sparseAt(&s.Flops, r)
		gpuDur, _ := sparseAt(&s.OpGPUDur, r)
		kernels, _ := sparseAt(&s.OpKernels, r)
		if k := dictAt(tr, &s.OpKernel, r); name == "aten::mm" && k != "gemm" || name == "aten::_flash_attention_forward" && k != "flash_fwd_kernel" {
			t.Errorf("%s: longest kernel %q", name, k)
		}
		if got := (want{class, flops, gpuDur, kernels}); got != w {
			t.Errorf("%s: %+v, want %+v", name, got, w)
		}
	}
}

// An operator's cost is computed once for each set of raw shapes, types
// and concrete inputs, and told apart by each of them: every call gets
// the cost gpu.OpCost gives its own arguments.
func TestOpCostMemo(t *testing.T) {
	type call struct{ dims, types string }
	calls := []call{
		{`[[64, 128], [128, 256]]`, `["float", "float"]`},
		{`[[64, 128], [128, 512]]`, `["float", "float"]`},
		{`[[64, 128], [128, 256]]`, `["c10::BFloat16", "c10::BFloat16"]`},
		{`[[64, 128], [128, 256]]`, `["float", "float"]`},
		{`[[64, 128], [128, 512]]`, `["float", "float"]`},
	}
	var events []string
	for i, c := range calls {
		events = append(events, fmt.Sprintf(`{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": %d, "dur": 5, "args": {"Input Dims": %s, "Input type": %s}}`, i*10, c.dims, c.types))
	}
	tr := mustRead(t, "memo.json", `{"traceEvents": [`+strings.Join(events, ",\n")+`]}`)
	s := tr.Slices
	seen := 0
	for r := range s.Len() {
		if nameOf(tr, r) != "aten::mm" {
			continue
		}
		c := calls[s.TS.V[r]/10_000]
		want, ok := gpu.OpCost("aten::mm", []byte(c.dims), []byte(c.types), nil)
		if !ok {
			t.Fatalf("no cost for %+v", c)
		}
		flops, _ := sparseAt(&s.Flops, r)
		bytes, _ := sparseAt(&s.OpBytes, r)
		if flops != want.FLOPs || bytes != want.Bytes {
			t.Errorf("call at %d us (%+v): %d FLOPs, %d bytes; want %d, %d", s.TS.V[r]/1000, c, flops, bytes, want.FLOPs, want.Bytes)
		}
		seen++
	}
	if seen != len(calls) {
		t.Fatalf("%d calls read, want %d", seen, len(calls))
	}
}
