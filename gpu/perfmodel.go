package gpu

import "strings"

// The performance model: how many floating-point operations a PyTorch
// operator performs and how many bytes it must move to and from device
// memory, from the input shapes, dtypes and scalar arguments a trace
// recorded with record_shapes=True ("Input Dims", "Input type",
// "Concrete Inputs"). With a GPU's peaks these give the operator's
// roofline: the least time it can take, compute-bound above the ridge
// point (FLOPs per byte = peak FLOP/s over bandwidth) and memory-bound
// below it.
//
// Bytes are the compulsory traffic: every input read once and every output
// written once. A kernel that re-reads a tensor (a GEMM's tiles that do not
// fit in L2, an attention backward that recomputes) moves more, so the
// memory roof is a bound it may not reach, never one it can beat.
//
// One row per operator name, in one table (opModels). Only operators that
// do the work themselves are modelled (aten::mm, not the aten::matmul or
// aten::linear that calls it), so that the FLOPs of a step are the sum over
// its operators; where both an operator and the one it calls are modelled
// (aten::_scaled_dot_product_flash_attention and the
// aten::_flash_attention_forward inside it) the reader keeps the inner one.
//
// Not modelled, so counted nowhere: aten::cat and other tensor-list ops
// whose dtype the trace does not give, indexing and scatter/gather beyond
// embedding lookups and index_select, sorting and top-k, custom and
// compiled (Triton) kernels without an aten operator, and CPU work.
// Collectives are costed by the communication detectors (bytes times
// nccl-tests' bus factor against the link), not here.

// Op classes of the model.
const (
	ClassGEMM        = "gemm"
	ClassAttention   = "attention"
	ClassConv        = "conv"
	ClassSoftmax     = "softmax"
	ClassNorm        = "norm"
	ClassElementwise = "elementwise"
	ClassReduction   = "reduction"
	ClassEmbedding   = "embedding"
	ClassOptimizer   = "optimizer"
)

// Cost is one operator call's modelled work.
type Cost struct {
	Class string // one of the Class constants
	FLOPs int64  // floating-point operations; a multiply-add counts two
	Bytes int64  // compulsory bytes read and written in device memory
	Dtype string // the dtype the work runs in (bf16, fp16, fp8, fp32); "" when unknown
}

type opModel struct {
	class string
	cost  func(a args) (flops, bytes int64, dtype string, ok bool)
}

// args gives a recorded call's arguments by position; past the end they
// are empty.
type args []opArg

func (a args) at(i int) opArg {
	if i >= 0 && i < len(a) {
		return a[i]
	}
	return opArg{}
}

// OpClass is the model class of an operator name, or "" when it has none.
func OpClass(name string) string {
	if m, ok := opModels[name]; ok {
		return m.class
	}
	if strings.HasPrefix(name, "aten::_foreach_") {
		return ClassOptimizer
	}
	return ""
}

// OpCost is an operator call's cost from its recorded "Input Dims",
// "Input type" and "Concrete Inputs" JSON; ok is false when the operator
// has no model or the shapes do not fit it (then nothing is counted rather
// than a wrong number).
func OpCost(name string, dims, types, concrete []byte) (Cost, bool) {
	m, ok := opModels[name]
	if !ok {
		if !strings.HasPrefix(name, "aten::_foreach_") {
			return Cost{}, false
		}
		m = opModel{ClassOptimizer, foreach(name)}
	}
	a, ok := parseArgs(dims, types, concrete)
	if !ok {
		return Cost{}, false
	}
	f, b, dt, ok := m.cost(a)
	if !ok || f < 0 || b <= 0 {
		return Cost{}, false
	}
	return Cost{Class: m.class, FLOPs: f, Bytes: b, Dtype: dt}, true
}

// opModels is the model table. Each formula says where it reads its
// shapes: positions follow the operator's schema in PyTorch's
// native_functions.yaml.
var opModels = map[string]opModel{
	// C[M,N] = A[M,K] B[K,N]: 2MKN FLOPs; A, B read and C written once
	"aten::mm":                 {ClassGEMM, gemm(-1, 0, 1)},
	"aten::addmm":              {ClassGEMM, gemm(0, 1, 2)}, // bias, mat1, mat2
	"aten::_addmm_activation":  {ClassGEMM, gemm(0, 1, 2)},
	"aten::bmm":                {ClassGEMM, gemm(-1, 0, 1)},
	"aten::baddbmm":            {ClassGEMM, gemm(0, 1, 2)},
	"aten::_scaled_mm":         {ClassGEMM, scaledMM},
	"aten::_grouped_mm":        {ClassGEMM, groupedMM},
	"aten::_scaled_grouped_mm": {ClassGEMM, groupedMM},

	// attention: Q·Kᵀ and P·V, 4·B·H·Lq·Lk·D, half of it under a causal
	// mask of square shape; the backward 2.5 times the forward (five
	// matmuls, two of them the forward's recomputed)
	"aten::_scaled_dot_product_flash_attention":              {ClassAttention, attention(bhld, 0, 4, false)},
	"aten::_scaled_dot_product_efficient_attention":          {ClassAttention, attention(bhld, 0, 6, false)},
	"aten::_scaled_dot_product_cudnn_attention":              {ClassAttention, attention(bhld, 0, 6, false)},
	"aten::_flash_attention_forward":                         {ClassAttention, attention(blhd, 0, 8, false)},
	"aten::_efficient_attention_forward":                     {ClassAttention, attention(blhdMask, 0, 9, false)},
	"aten::_scaled_dot_product_flash_attention_backward":     {ClassAttention, attention(bhld, 1, 11, true)},
	"aten::_scaled_dot_product_efficient_attention_backward": {ClassAttention, attention(bhld, 1, 11, true)},
	"aten::_scaled_dot_product_cudnn_attention_backward":     {ClassAttention, attention(bhld, 1, 14, true)},
	"aten::_flash_attention_backward":                        {ClassAttention, attention(blhd, 1, 11, true)},
	"aten::_efficient_attention_backward":                    {ClassAttention, attention(blhdMask, 1, 14, true)},

	// convolution at the dispatcher's entry, whatever backend runs it
	"aten::convolution":          {ClassConv, convolution},
	"aten::convolution_backward": {ClassConv, convolutionBackward},

	// softmax: max, subtract, exp, sum, divide
	"aten::_softmax":                   {ClassSoftmax, softmax(5)},
	"aten::_log_softmax":               {ClassSoftmax, softmax(5)},
	"aten::_softmax_backward_data":     {ClassSoftmax, softmaxBackward},
	"aten::_log_softmax_backward_data": {ClassSoftmax, softmaxBackward},
	"aten::native_layer_norm":          {ClassNorm, norm(0, 8, 2)},
	"aten::native_layer_norm_backward": {ClassNorm, norm(1, 12, 3)},
	"aten::_fused_rms_norm":            {ClassNorm, norm(0, 4, 2)},
	"aten::_fused_rms_norm_backward":   {ClassNorm, norm(1, 6, 3)},
	"aten::native_group_norm":          {ClassNorm, norm(0, 8, 2)},
	"aten::native_group_norm_backward": {ClassNorm, norm(1, 12, 3)},
	"aten::native_batch_norm":          {ClassNorm, norm(0, 8, 3)}, // training reads twice: statistics, then normalise
	"aten::cudnn_batch_norm":           {ClassNorm, norm(0, 8, 3)},
	"aten::miopen_batch_norm":          {ClassNorm, norm(0, 8, 3)},
	"aten::native_batch_norm_backward": {ClassNorm, norm(1, 12, 3)},
	"aten::cudnn_batch_norm_backward":  {ClassNorm, norm(1, 12, 3)},
	"_C::rms_norm":                     {ClassNorm, norm(1, 4, 2)},  // vLLM: out, input, weight, eps
	"_C::fused_add_rms_norm":           {ClassNorm, norm(0, 5, 4)},  // vLLM: input and residual read and written
	"aten::embedding":                  {ClassEmbedding, embedding}, // weight, indices
	"aten::embedding_dense_backward":   {ClassEmbedding, embeddingBackward},
	"aten::index_select":               {ClassEmbedding, indexSelect},
	"aten::_fused_adam_":               {ClassOptimizer, fusedOptimizer(12, 7)},
	"aten::_fused_adamw_":              {ClassOptimizer, fusedOptimizer(12, 7)},
	"aten::_fused_sgd_":                {ClassOptimizer, fusedOptimizer(3, 5)},
	"aten::copy_":                      {ClassElementwise, copyOp},
	"aten::fill_":                      {ClassElementwise, fillOp},
	"aten::sum":                        {ClassReduction, reduction},
	"aten::mean":                       {ClassReduction, reduction},
	"aten::amax":                       {ClassReduction, reduction},
	"aten::amin":                       {ClassReduction, reduction},
	"aten::argmax":                     {ClassReduction, reduction},
	"aten::linalg_vector_norm":         {ClassReduction, reduction},
	"aten::norm":                       {ClassReduction, reduction},
	"aten::var_mean":                   {ClassReduction, reduction},
	"aten::std":                        {ClassReduction, reduction},
	"aten::var":                        {ClassReduction, reduction},
	"aten::logsumexp":                  {ClassReduction, reduction},
	"aten::cumsum":                     {ClassReduction, reduction},
	"aten::native_dropout":             {ClassElementwise, elementwise(2, 2)}, // output and mask
	"aten::native_dropout_backward":    {ClassElementwise, elementwise(1, 1)},
	"aten::gelu_backward":              {ClassElementwise, elementwise(8, 1)},
	"aten::silu_backward":              {ClassElementwise, elementwise(5, 1)},
	"aten::threshold_backward":         {ClassElementwise, elementwise(1, 1)},
	"aten::sigmoid_backward":           {ClassElementwise, elementwise(3, 1)},
	"aten::tanh_backward":              {ClassElementwise, elementwise(3, 1)},
}

func init() {
	// element-wise operators, out of place and in place: one FLOP per
	// output element (transcendental ones a few), every input read and the
	// output written once
	for name, flops := range map[string]int64{
		"add": 1, "sub": 1, "mul": 1, "div": 1, "rsub": 1, "neg": 1, "abs": 1, "clamp": 1, "clamp_min": 1, "clamp_max": 1,
		"maximum": 1, "minimum": 1, "where": 1, "masked_fill": 1, "lerp": 3, "addcmul": 2, "addcdiv": 2,
		"exp": 4, "log": 4, "sqrt": 4, "rsqrt": 4, "reciprocal": 1, "pow": 4, "tanh": 4, "sigmoid": 4, "sin": 4, "cos": 4,
		"gelu": 8, "silu": 5, "relu": 1, "threshold": 1, "hardtanh": 1, "leaky_relu": 1, "erf": 4,
		"eq": 1, "ne": 1, "lt": 1, "gt": 1, "le": 1, "ge": 1, "logical_and": 1, "logical_or": 1, "logical_not": 1, "bitwise_and": 1,
	} {
		opModels["aten::"+name] = opModel{ClassElementwise, elementwise(flops, 1)}
		opModels["aten::"+name+"_"] = opModel{ClassElementwise, elementwise(flops, 0)}
	}
}

// dtypeOf maps a PyTorch scalar type name to the catalog's dtype names.
func dtypeOf(t string) string {
	switch strings.TrimPrefix(t, "c10::") {
	case "BFloat16":
		return "bf16"
	case "Half":
		return "fp16"
	case "float", "Float":
		return "fp32"
	case "Float8_e4m3fn", "Float8_e5m2", "Float8_e4m3fnuz", "Float8_e5m2fnuz":
		return "fp8"
	}
	return ""
}
