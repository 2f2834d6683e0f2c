package gpu

import (
	"strings"
	"testing"
)

// Hand-worked costs: each want is computed in the comment beside it from
// the shapes, not by the code under test.
func TestOpCost(t *testing.T) {
	const bf, f32 = `"c10::BFloat16"`, `"float"`
	cases := []struct {
		name, dims, types, concrete string
		class                       string
		flops, bytes                int64
		dtype                       string
	}{
		// 1. mm [4096,1024]x[1024,512] bf16: 2*4096*1024*512 FLOPs;
		// (4096*1024 + 1024*512 + 4096*512)*2 = (4194304+524288+2097152)*2
		{"aten::mm", `[[4096, 1024], [1024, 512]]`, `[` + bf + `,` + bf + `]`, ``, ClassGEMM, 4294967296, 13631488, "bf16"},
		// 2. addmm bias[512] + [64,1024]x[1024,512] fp32: 2*64*1024*512;
		// (64*1024 + 1024*512 + 64*512 + 512)*4 = (65536+524288+32768+512)*4
		{"aten::addmm", `[[512], [64, 1024], [1024, 512], [], []]`, `[` + f32 + `,` + f32 + `,` + f32 + `, "Scalar", "Scalar"]`, `["", "", "", "1", "1"]`, ClassGEMM, 67108864, 2492416, "fp32"},
		// 3. the Qwen trace's addmm: bias[1024], [8944,1024]x[1024,1024] bf16:
		// 2*8944*1024*1024 = 18756927488; (9158656+1048576+9158656+1024)*2
		{"aten::addmm", `[[1024], [8944, 1024], [1024, 1024], [], []]`, `[` + bf + `,` + bf + `,` + bf + `, "Scalar", "Scalar"]`, `["", "", "", "1", "1"]`, ClassGEMM, 18756927488, 38733824, "bf16"},
		// 4. bmm [8,128,64]x[8,64,128] fp16: 2*8*128*64*128 = 16777216;
		// 8*(8192+8192+16384)*2 = 524288
		{"aten::bmm", `[[8, 128, 64], [8, 64, 128]]`, `["c10::Half", "c10::Half"]`, ``, ClassGEMM, 16777216, 524288, "fp16"},
		// 5. baddbmm C[8,128,128] + [8,128,64]x[8,64,128] fp16: as 4, plus C
		// read: 8*128*128*2 = 262144
		{"aten::baddbmm", `[[8, 128, 128], [8, 128, 64], [8, 64, 128], [], []]`, `["c10::Half", "c10::Half", "c10::Half"]`, ``, ClassGEMM, 16777216, 786432, "fp16"},
		// 6. _scaled_mm fp8 [256,512]x[512,128]: 2*256*512*128 = 33554432;
		// (131072+65536)*1 + 256*128*2 = 196608+65536
		{"aten::_scaled_mm", `[[256, 512], [512, 128], [], []]`, `["c10::Float8_e4m3fn", "c10::Float8_e4m3fn"]`, ``, ClassGEMM, 33554432, 262144, "fp8"},
		// 7. grouped mm, 8 experts: A[1024,512] x B[8,512,256] bf16:
		// 2*1024*512*256 = 268435456; (524288 + 8*131072 + 262144)*2
		{"aten::_grouped_mm", `[[1024, 512], [8, 512, 256], [8]]`, `[` + bf + `,` + bf + `, "int"]`, ``, ClassGEMM, 268435456, 3670016, "bf16"},
		// 8. SDPA flash forward, not causal, q=k=v [2,16,1024,64] bf16:
		// 4*2*16*1024*1024*64 = 8589934592; (3*2097152 + 2097152)*2
		{"aten::_scaled_dot_product_flash_attention", `[[2, 16, 1024, 64], [2, 16, 1024, 64], [2, 16, 1024, 64], [], []]`, `[` + bf + `,` + bf + `,` + bf + `, "Scalar", "Scalar"]`, `["", "", "", "0.", "False"]`, ClassAttention, 8589934592, 16777216, "bf16"},
		// 9. the same, causal: half the score matrix, 4294967296
		{"aten::_scaled_dot_product_flash_attention", `[[2, 16, 1024, 64], [2, 16, 1024, 64], [2, 16, 1024, 64], [], []]`, `[` + bf + `,` + bf + `,` + bf + `, "Scalar", "Scalar"]`, `["", "", "", "0.", "True"]`, ClassAttention, 4294967296, 16777216, "bf16"},
		// 10. the Qwen trace's flash forward [16,559,16,64] (B,L,H,D),
		// causal: 4*16*16*559*559*64 = 20478754816, halved: 10239377408;
		// 4*16*559*16*64*2 = 73269248
		{"aten::_flash_attention_forward", `[[16, 559, 16, 64], [16, 559, 16, 64], [16, 559, 16, 64], [], [], [], [], [], [], [], [], [], [], [], []]`, `[` + bf + `,` + bf + `,` + bf + `]`, `["", "", "", "", "", "559", "559", "0.", "True", "False", "0.125"]`, ClassAttention, 10239377408, 73269248, "bf16"},
		// 11. flash backward, not causal, q [2,16,1024,64], k=v [2,16,2048,64]:
		// forward 4*2*16*1024*2048*64 = 17179869184, times 2.5;
		// (2097152 + 2*4194304 + 2097152)*2*2 = 50331648
		{"aten::_scaled_dot_product_flash_attention_backward", `[[2, 16, 1024, 64], [2, 16, 1024, 64], [2, 16, 2048, 64], [2, 16, 2048, 64]]`, `[` + bf + `,` + bf + `]`, ``, ClassAttention, 42949672960, 50331648, "bf16"},
		// 12. GQA decode: q [1,32,1,128], k=v [1,8,4096,128] causal (one
		// query sees every key): 4*1*32*1*4096*128 = 67108864;
		// q, k, v and the output read or written once:
		// (4096 + 2*8*4096*128 + 32*128)*2 = 16793600
		{"aten::_scaled_dot_product_flash_attention", `[[1, 32, 1, 128], [1, 8, 4096, 128], [1, 8, 4096, 128]]`, `[` + bf + `]`, `["", "", "", "0.", "True"]`, ClassAttention, 67108864, 16793600, "bf16"},
		// 13. conv2d, ResNet's stem: in [32,3,224,224], w [64,3,7,7], stride
		// 2, pad 3: out (224+6-6-1)/2+1 = 112; MACs 32*112*112*(64*3*49) =
		// 3776446464, FLOPs twice; (4816896 + 9408 + 25690112)*2 bytes fp16
		{"aten::convolution", `[[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []]`, `["c10::Half", "c10::Half", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"]`, `["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"]`, ClassConv, 7552892928, 61032832, "fp16"},
		// 14. depthwise 3x3, groups 64: in [8,64,56,56], w [64,1,3,3], pad 1:
		// MACs 8*56*56*576 = 14450688; (1605632+576+1605632)*4 fp32
		{"aten::convolution", `[[8, 64, 56, 56], [64, 1, 3, 3], [], [], [], [], [], [], []]`, `["float", "float"]`, `["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "64"]`, ClassConv, 28901376, 12847360, "fp32"},
		// 15. its backward, both gradients: 2*2*14450688; grad_out, input,
		// weight read, grad_in and grad_w written: (3*1605632 + 2*576)*4
		{"aten::convolution_backward", `[[8, 64, 56, 56], [8, 64, 56, 56], [64, 1, 3, 3], [], [], [], [], [], [], [], []]`, `["float", "float", "float"]`, `["", "", "", "[64]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "64", "[True, True, False]"]`, ClassConv, 57802752, 19272192, "fp32"},
		// 16. softmax over [16,16,559,559] bf16: 5 FLOPs an element,
		// read and write: 79995136*5, 79995136*4
		{"aten::_softmax", `[[16, 16, 559, 559], [], []]`, `[` + bf + `, "Scalar", "Scalar"]`, `["", "-1", "False"]`, ClassSoftmax, 399975680, 319980544, "bf16"},
		// 17. layer norm [8,512,1024] fp32: 8 FLOPs, read+write: 4194304*8,
		// 4194304*2*4
		{"aten::native_layer_norm", `[[8, 512, 1024], [], [1024], [1024], []]`, `[` + f32 + `, "ScalarList", ` + f32 + `,` + f32 + `, "Scalar"]`, ``, ClassNorm, 33554432, 33554432, "fp32"},
		// 18. add [4096,1024] + [1024] bf16: 4194304 outputs; reads
		// (4194304+1024)*2, write 4194304*2
		{"aten::add", `[[4096, 1024], [1024], []]`, `[` + bf + `,` + bf + `, "Scalar"]`, ``, ClassElementwise, 4194304, 16779264, "bf16"},
		// 19. in-place mul_ [4096,1024] by a scalar: read and write it
		{"aten::mul_", `[[4096, 1024], []]`, `[` + bf + `, "Scalar"]`, ``, ClassElementwise, 4194304, 16777216, "bf16"},
		// 20. copy_ fp32 [1,1,559] from int64: 559*4 + 559*8
		{"aten::copy_", `[[1, 1, 559], [1, 1, 559], []]`, `["float", "long int", "Scalar"]`, `["", "", "False"]`, ClassElementwise, 0, 6708, "fp32"},
		// 21. mean over the last dim of [16,559,1024] fp32, keepdim:
		// 9158656 reads, 8944 outputs: (9158656+8944)*4
		{"aten::mean", `[[16, 559, 1024], [], [], []]`, `["float", "ScalarList", "Scalar", ""]`, `["", "[-1]", "True", ""]`, ClassReduction, 9158656, 36670400, "fp32"},
		// 22. embedding: weight [151936,1024] bf16, indices [16,559] int64:
		// 8944 rows of 1024 read and written, indices read:
		// 2*8944*1024*2 + 8944*8 = 36706176
		{"aten::embedding", `[[151936, 1024], [16, 559], [], [], []]`, `[` + bf + `, "long int", "Scalar", "Scalar", "Scalar"]`, ``, ClassEmbedding, 0, 36706176, "bf16"},
		// 23. fused AdamW over 1M + 1024 parameters: 12 FLOPs, 7 fp32
		// accesses each: 1049600*12, 1049600*28
		{"aten::_fused_adamw_", `[[[1024, 1024], [1024]], [[1024, 1024], [1024]], [[1024, 1024], [1024]], [[1024, 1024], [1024]], [], [[], []]]`, `["TensorList", "TensorList", "TensorList", "TensorList", "TensorList", "TensorList"]`, ``, ClassOptimizer, 12595200, 29388800, "fp32"},
		// 24. _foreach_add_ of two lists of 1M+1024: one FLOP each; two
		// lists read, one written, fp32: 1049600*3*4
		{"aten::_foreach_add_", `[[[1024, 1024], [1024]], [[1024, 1024], [1024]], []]`, `["TensorList", "TensorList", "Scalar"]`, ``, ClassOptimizer, 1049600, 12595200, "fp32"},
		// 25. vLLM fused_add_rms_norm: input and residual [32,4096] bf16,
		// both read and written: 131072*5, 131072*4*2
		{"_C::fused_add_rms_norm", `[[32, 4096], [32, 4096], [4096], []]`, `[` + bf + `,` + bf + `,` + bf + `, "Scalar"]`, ``, ClassNorm, 655360, 1048576, "bf16"},
	}
	for i, c := range cases {
		if got := OpClass(c.name); got != c.class {
			t.Errorf("%d %s: class %q, want %q", i+1, c.name, got, c.class)
		}
		cost, ok := OpCost(c.name, []byte(c.dims), []byte(c.types), []byte(c.concrete))
		if !ok {
			t.Errorf("%d %s %s: no cost", i+1, c.name, c.dims)
			continue
		}
		want := Cost{Class: c.class, FLOPs: c.flops, Bytes: c.bytes, Dtype: c.dtype}
		if cost != want {
			t.Errorf("%d %s %s:\n got %+v\nwant %+v", i+1, c.name, c.dims, cost, want)
		}
	}
}

// Shapes that do not fit an operator give no cost, never a wrong one; and
// composites that call a modelled operator have no model of their own.
func TestOpCostRefuses(t *testing.T) {
	for _, c := range []struct{ name, dims string }{
		{"aten::mm", `[[4096, 1024], [512, 512]]`},
		{"aten::mm", `[[4096, 1024]]`},
		{"aten::mm", `not json`},
		{"aten::mm", `[[4096, "x"], [1024, 8]]`},
		{"aten::bmm", `[[8, 128, 64], [4, 64, 128]]`},
		{"aten::_flash_attention_forward", `[[16, 559, 16, 64], [16, 559, 16]]`},
		{"aten::convolution", `[[32, 3, 4, 4], [64, 3, 7, 7]]`}, // no output position
		{"aten::_softmax", `[[], []]`},
		{"aten::add", `[[], []]`},
		{"aten::mm", `[[1099511627777, 2], [2, 2]]`}, // too large to count
	} {
		if cost, ok := OpCost(c.name, []byte(c.dims), nil, nil); ok {
			t.Errorf("%s %s: %+v, want no cost", c.name, c.dims, cost)
		}
	}
	for _, n := range []string{"aten::matmul", "aten::linear", "aten::conv2d", "aten::_convolution", "aten::scaled_dot_product_attention", "aten::layer_norm", "aten::to", "aten::zero_", "aten::cat"} {
		if c := OpClass(n); c != "" {
			t.Errorf("%s has class %q: composites would count their callee twice", n, c)
		}
	}
}

func TestCompactShape(t *testing.T) {
	for in, want := range map[string]string{
		`[[1024], [8944, 1024], [1024, 1024], [], []]`: `[[1024],[8944,1024],[1024,1024]]`,
		`[[4096, 1024], [1024, 512]]`:                  `[[4096,1024],[1024,512]]`,
		`[[], []]`:                                     `[[]]`,
		`[]`:                                           `[]`,
	} {
		if got := CompactShape([]byte(in)); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func FuzzOpCost(f *testing.F) {
	f.Add("aten::mm", `[[4096, 1024], [1024, 512]]`, `["float"]`, `["", ""]`)
	f.Add("aten::convolution", `[[8, 64, 56, 56], [64, 1, 3, 3], [], [], [], [], [], [], []]`, `["float"]`, `["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "64"]`)
	f.Add("aten::_fused_adamw_", `[[[1024, 1024], [1024]], [[1024]]]`, `["TensorList"]`, ``)
	f.Add("aten::_flash_attention_forward", `[[16, 559, 16, 64], [16, 559, 16, 64], [16, 559, 16, 64]]`, `[]`, `["", "", "", "", "", "559", "559", "0.", "True"]`)
	f.Fuzz(func(t *testing.T, name, dims, types, concrete string) {
		c, ok := OpCost(name, []byte(dims), []byte(types), []byte(concrete))
		if ok && (c.FLOPs < 0 || c.Bytes <= 0 || c.Class == "") {
			t.Fatalf("%s %s: %+v", name, dims, c)
		}
		if !ok && c != (Cost{}) {
			t.Fatalf("refused with a cost: %+v", c)
		}
		_ = CompactShape([]byte(dims))
		_ = strings.Count(dims, "[")
	})
}
