package gpu

import "testing"

func TestOpFlops(t *testing.T) {
	cases := []struct {
		name, dims, types string
		flops             int64
		dtype             string
	}{
		{"aten::mm", `[[4096, 1024], [1024, 512]]`, `["c10::BFloat16", "c10::BFloat16"]`, 2 * 4096 * 1024 * 512, "bf16"},
		{"aten::addmm", `[[512], [64, 1024], [1024, 512], [], []]`, `["float", "float", "float", "Scalar", "Scalar"]`, 2 * 64 * 1024 * 512, "fp32"},
		{"aten::bmm", `[[8, 128, 64], [8, 64, 128]]`, `["c10::Half", "c10::Half"]`, 2 * 8 * 128 * 64 * 128, "fp16"},
		{"aten::baddbmm", `[[8, 128, 128], [8, 128, 64], [8, 64, 128], [], []]`, `["c10::Half", "c10::Half", "c10::Half"]`, 2 * 8 * 128 * 64 * 128, "fp16"},
		{"aten::_scaled_mm", `[[256, 512], [512, 128], [], []]`, `["c10::Float8_e4m3fn", "c10::Float8_e4m3fn"]`, 2 * 256 * 512 * 128, "fp8"},
		{"aten::_scaled_dot_product_flash_attention", `[[2, 16, 1024, 64], [2, 16, 1024, 64], [2, 16, 1024, 64], [], []]`, `["c10::BFloat16"]`, 4 * 2 * 16 * 1024 * 1024 * 64, "bf16"},
		{"aten::_scaled_dot_product_flash_attention_backward", `[[2, 16, 1024, 64], [2, 16, 1024, 64], [2, 16, 2048, 64], [2, 16, 2048, 64]]`, `["c10::BFloat16", "c10::BFloat16"]`, 10 * 2 * 16 * 1024 * 2048 * 64, "bf16"},
		// shapes that do not fit: no FLOPs rather than a wrong number
		{"aten::mm", `[[4096, 1024], [512, 512]]`, `[]`, 0, ""},
		{"aten::mm", `[[4096, 1024]]`, `[]`, 0, ""},
		{"aten::mm", `not json`, `[]`, 0, ""},
		{"aten::bmm", `[[8, 128, 64], [4, 64, 128]]`, `[]`, 0, ""},
	}
	for _, c := range cases {
		op := FlopOp(c.name)
		if op == "" {
			t.Fatalf("%s: not a FLOP op", c.name)
		}
		f, dt := OpFlops(op, []byte(c.dims), []byte(c.types))
		if f != c.flops || dt != c.dtype {
			t.Errorf("%s %s: %d %q, want %d %q", c.name, c.dims, f, dt, c.flops, c.dtype)
		}
	}
	for _, n := range []string{"aten::matmul", "aten::linear", "aten::add", "aten::_flash_attention_forward"} {
		if FlopOp(n) != "" {
			t.Errorf("%s counted: composites and inner calls would count twice", n)
		}
	}
}
