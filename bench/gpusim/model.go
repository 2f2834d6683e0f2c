package gpusim

import "fmt"

// Kernel names as PyTorch on an H100/H200 spells them.
const (
	kGemmBF16  = "nvjet_tst_256x128_64x4_2x1_v_bz_coopB_TNT"
	kGemmBF16b = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
	kGemmFP32  = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel_cublas"
	kGemmFP32b = "ampere_sgemm_128x64_tn"
	kGemmTF32  = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x64x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
	kFlashFwd  = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)"
	kFlashBwd  = "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, 128, 128, 8, 4, 2, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> >, true, true, false, false, false, false>(pytorch_flash::Flash_bwd_params)"
	kMemEffFwd = "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)"
	kMemEffBwd = "fmha_cutlassB_f32_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::Sm80, float, true, false, true, 64, 64, 64, false>::Params)"
	kLayerNorm = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)"
	kLNBwd     = "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)"
	kGelu      = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)"
	kAdd       = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)"
	kNorm      = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::NormTwoOps<float, float, float>, unsigned int, float, 4>)"
	kSoftmax   = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)"
	kNLL       = "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)"
	kAdamFused = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, double*, double*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, double*, double*)"
	kTinyElem  = "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul>)"
	kFill      = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
)

// The healthy job: 8 transformer layers of width 1024 on 8 x 1024 tokens.
const (
	tokens = 8 * 1024
	width  = 1024
	ffn    = 4 * width
	vocab  = 32000
	layers = 8
)

// gemmUS is a matmul's time on an H200: bf16 at ~600 TFLOP/s achieved,
// FP32 on the CUDA cores at ~55.
func (s *sim) gemmUS(m, n, k int) float64 {
	flops := 2 * float64(m) * float64(n) * float64(k)
	if s.opt.Scenario == FP32 {
		return flops/55e6 + 8
	}
	return flops/600e6 + 6
}

// elemUS is an elementwise kernel over n elements (read and written once).
func (s *sim) elemUS(n int) float64 {
	b := 2.0
	if s.opt.Scenario == FP32 {
		b = 4
	}
	return 2*float64(n)*b/4.0e6 + 4
}

// linear is nn.Linear's forward of [tokens, in] x [in, out] on tid.
func (s *sim) linear(in, out int, tid int) {
	t, name := "c10::BFloat16", kGemmBF16
	if s.opt.Scenario == FP32 {
		t, name = "float", kGemmFP32
		if out > in {
			name = kGemmFP32b
		}
	}
	s.op("aten::linear", [][]int{{8, 1024, in}, {out, in}, {out}}, []string{t, t, t}, 38, tid, kern{name, s.gemmUS(tokens, out, in)})
}

// mmBackward is a linear layer's backward: the data and weight gradients.
func (s *sim) mmBackward(in, out int) {
	t, name := "c10::BFloat16", kGemmBF16b
	if s.opt.Scenario == FP32 {
		t, name = "float", kGemmFP32
	}
	// as PyTorch records it: the backward node, and inside it the two
	// aten::mm calls with their shapes
	t0 := s.host
	s.host += 6
	s.op("aten::mm", [][]int{{tokens, out}, {out, in}}, []string{t, t}, 14, autogradTID, kern{name, s.gemmUS(tokens, in, out)})
	s.op("aten::mm", [][]int{{in, tokens}, {tokens, out}}, []string{t, t}, 14, autogradTID, kern{name, s.gemmUS(in, out, tokens)})
	s.host += 4
	s.ext++
	s.cpu("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", t0, s.host-t0, autogradTID, map[string]any{"External id": s.ext})
}

func (s *sim) attention(backward bool) {
	fwd, bwd, t := kFlashFwd, kFlashBwd, "c10::BFloat16"
	us := 4*8*16*1024*1024*64*0.5/600e6 + 10
	if s.opt.Scenario == FP32 {
		fwd, bwd, t = kMemEffFwd, kMemEffBwd, "float"
		us = 4*8*16*1024*1024*64*0.5/40e6 + 10
	}
	if backward {
		s.op("autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0", [][]int{{8, 16, 1024, 64}}, []string{t}, 45, autogradTID, kern{bwd, 2.5 * us})
		return
	}
	s.op("aten::scaled_dot_product_attention", [][]int{{8, 16, 1024, 64}, {8, 16, 1024, 64}, {8, 16, 1024, 64}}, []string{t, t, t}, 55, mainTID, kern{fwd, us})
}

// gptStep is one training step of the transformer: forward on the main
// thread (with the sync scenario's probe after each layer), backward on
// the autograd thread while the main thread waits in backward(), then the
// fused AdamW step.
func (s *sim) gptStep() {
	act := tokens * width
	for l := range layers {
		s.op("aten::layer_norm", nil, nil, 30, mainTID, kern{kLayerNorm, s.elemUS(act)})
		s.linear(width, 3*width, mainTID)
		s.attention(false)
		s.linear(width, width, mainTID)
		s.op("aten::add", nil, nil, 18, mainTID, kern{kAdd, s.elemUS(act)})
		s.op("aten::layer_norm", nil, nil, 30, mainTID, kern{kLayerNorm, s.elemUS(act)})
		s.linear(width, ffn, mainTID)
		s.op("aten::gelu", nil, nil, 20, mainTID, kern{kGelu, s.elemUS(tokens * ffn)})
		s.linear(ffn, width, mainTID)
		s.op("aten::add", nil, nil, 18, mainTID, kern{kAdd, s.elemUS(act)})
		if s.opt.Scenario == Sync {
			s.op("aten::linalg_vector_norm", [][]int{{8, 1024, width}}, []string{"float"}, 25, mainTID, kern{kNorm, s.elemUS(act) / 2})
			s.copyOp("DtoH", 4, 1, mainTID)
			s.python(fmt.Sprintf("bench/gpu/scenarios.py(%d): log_activation", 120+l), 500*s.opt.Strength*s.jitter(0.05))
		}
	}
	s.linear(width, vocab, mainTID)
	s.op("aten::cross_entropy", nil, nil, 60, mainTID, kern{kSoftmax, s.elemUS(tokens * vocab)}, kern{kNLL, 12})

	// backward: the main thread waits in backward() while the autograd
	// engine's thread launches
	t0 := s.host
	s.host += 15
	s.op("autograd::engine::evaluate_function: NllLossBackward0", nil, nil, 30, autogradTID, kern{kFill, 5}, kern{kSoftmax, s.elemUS(tokens * vocab)})
	s.mmBackward(width, vocab)
	for range layers {
		s.op("autograd::engine::evaluate_function: AddBackward0", nil, nil, 12, autogradTID)
		s.mmBackward(ffn, width)
		s.op("autograd::engine::evaluate_function: GeluBackward0", nil, nil, 22, autogradTID, kern{kGelu, s.elemUS(tokens*ffn) * 1.5})
		s.mmBackward(width, ffn)
		s.op("autograd::engine::evaluate_function: NativeLayerNormBackward0", nil, nil, 35, autogradTID, kern{kLNBwd, s.elemUS(act) * 1.6})
		s.mmBackward(width, width)
		s.attention(true)
		s.mmBackward(width, 3*width)
		s.op("autograd::engine::evaluate_function: NativeLayerNormBackward0", nil, nil, 35, autogradTID, kern{kLNBwd, s.elemUS(act) * 1.6})
	}
	// backward() returns when the engine has run (not when the GPU has)
	s.cpu("python_function", "torch/_tensor.py(626): backward", t0, s.host-t0, mainTID, nil)
	s.host += 10

	// fused AdamW over 166M fp32 parameters: ~2.7 GB read and written
	t0 = s.host
	s.op("aten::_fused_adamw_", nil, nil, 180, mainTID, kern{kAdamFused, 170}, kern{kAdamFused, 170}, kern{kAdamFused, 170}, kern{kAdamFused, 170})
	s.userAnnotation("Optimizer.step#AdamW.step", t0, s.host-t0, mainTID)
	t0 = s.host
	s.host += 60
	s.userAnnotation("Optimizer.zero_grad#AdamW.zero_grad", t0, s.host-t0, mainTID)
}

// mlpStep is one step of the launch-bound model: 24 layers of width 256 on
// a batch of 16, and Adam without foreach (a few kernels per parameter).
func (s *sim) mlpStep() {
	const n = 24
	small := kern{kTinyElem, 2.2}
	for range n {
		s.op("aten::linear", [][]int{{16, 256}, {256, 256}, {256}}, []string{"float", "float", "float"}, 22, mainTID, kern{kGemmTF32, 3.6})
		s.op("aten::gelu", nil, nil, 14, mainTID, small)
		s.op("aten::layer_norm", nil, nil, 20, mainTID, kern{kLayerNorm, 3.1})
	}
	s.op("aten::linear", [][]int{{16, 256}, {1, 256}, {1}}, []string{"float", "float", "float"}, 22, mainTID, kern{kGemmTF32, 3})
	s.op("aten::pow", nil, nil, 14, mainTID, small)
	s.op("aten::mean", nil, nil, 16, mainTID, kern{kNorm, 3})
	t0 := s.host
	s.host += 12
	for range n {
		s.op("autograd::engine::evaluate_function: NativeLayerNormBackward0", nil, nil, 28, autogradTID, kern{kLNBwd, 3.5}, small)
		s.op("autograd::engine::evaluate_function: GeluBackward0", nil, nil, 16, autogradTID, small)
		s.op("autograd::engine::evaluate_function: AddmmBackward0", [][]int{{16, 256}, {256, 256}}, []string{"float", "float"}, 26, autogradTID,
			kern{kGemmTF32, 3.4}, kern{kGemmTF32, 3.4}, small)
	}
	s.cpu("python_function", "torch/_tensor.py(626): backward", t0, s.host-t0, mainTID, nil)
	s.host += 8
	t0 = s.host
	for range 4*n + 2 { // every weight, bias and norm parameter, one at a time
		for range 6 {
			s.op("aten::mul_", nil, nil, 9, mainTID, small)
		}
	}
	s.userAnnotation("Optimizer.step#Adam.step", t0, s.host-t0, mainTID)
	t0 = s.host
	s.host += 40
	s.userAnnotation("Optimizer.zero_grad#Adam.zero_grad", t0, s.host-t0, mainTID)
}
