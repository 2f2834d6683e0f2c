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

// gemm: A at a, B at b, an added input (bias, or C of baddbmm) at c (-1:
// none); 2-D A[M,K]·B[K,N] or batched 3-D A[G,M,K]·B[G,K,N].
func gemm(c, a, b int) func(args) (int64, int64, string, bool) {
	return func(x args) (int64, int64, string, bool) {
		A, B := x.at(a), x.at(b)
		e := A.elt(2)
		var g, m, k, n int64
		switch {
		case len(A.dims) == 2 && len(B.dims) == 2 && A.dims[1] == B.dims[0]:
			g, m, k, n = 1, A.dims[0], A.dims[1], B.dims[1]
		case len(A.dims) == 3 && len(B.dims) == 3 && A.dims[0] == B.dims[0] && A.dims[2] == B.dims[1]:
			g, m, k, n = A.dims[0], A.dims[1], A.dims[2], B.dims[2]
		default:
			return 0, 0, "", false
		}
		if A.numel() == 0 || B.numel() == 0 {
			return 0, 0, "", false
		}
		bytes := g * (m*k + k*n + m*n) * e
		if c >= 0 {
			bytes += x.at(c).numel() * x.at(c).elt(e)
		}
		return prod(2, g, m, k, n), bytes, dtypeOf(A.typ), true
	}
}

// scaledMM: fp8 A[M,K]·B[K,N] with a 16-bit output.
func scaledMM(x args) (int64, int64, string, bool) {
	A, B := x.at(0), x.at(1)
	if len(A.dims) != 2 || len(B.dims) != 2 || A.dims[1] != B.dims[0] {
		return 0, 0, "", false
	}
	m, k, n := A.dims[0], A.dims[1], B.dims[1]
	if A.numel() == 0 || B.numel() == 0 {
		return 0, 0, "", false
	}
	return prod(2, m, k, n), (m*k+k*n)*A.elt(1) + m*n*2, "fp8", true
}

// groupedMM: the grouped GEMM of mixture-of-experts layers, G groups:
// A[Mtotal,K]·B[G,K,N] (rows split among groups by offsets),
// A[G,M,K]·B[G,K,N], or A[M,Ktotal]·B[Ktotal,N] (the weight gradient).
func groupedMM(x args) (int64, int64, string, bool) {
	A, B := x.at(0), x.at(1)
	e := A.elt(2)
	dt := dtypeOf(A.typ)
	if A.numel() == 0 || B.numel() == 0 {
		return 0, 0, "", false
	}
	switch {
	case len(A.dims) == 2 && len(B.dims) == 3 && A.dims[1] == B.dims[1]:
		m, k, g, n := A.dims[0], A.dims[1], B.dims[0], B.dims[2]
		return prod(2, m, k, n), (m*k + g*k*n + m*n) * e, dt, true
	case len(A.dims) == 3 && len(B.dims) == 3 && A.dims[0] == B.dims[0] && A.dims[2] == B.dims[1]:
		g, m, k, n := A.dims[0], A.dims[1], A.dims[2], B.dims[2]
		return prod(2, g, m, k, n), g * (m*k + k*n + m*n) * e, dt, true
	case len(A.dims) == 2 && len(B.dims) == 2 && A.dims[1] == B.dims[0]:
		m, k, n := A.dims[0], A.dims[1], B.dims[1]
		return prod(2, m, k, n), (m*k + k*n + m*n) * e, dt, true
	}
	return 0, 0, "", false
}

// attention layouts: where batch, sequence, heads and head size sit.
const (
	bhld     = iota // [B, H, L, D]: the scaled_dot_product_* ops
	blhd            // [B, L, H, D]: flash attention's own ops
	blhdMask        // [B, L, H, D], causal given as a mask type (0 none)
)

// attention: q, k, v at first, first+1, first+2; the causal flag at
// causalAt. Keys and values may have fewer heads than queries (GQA).
func attention(layout, first, causalAt int, backward bool) func(args) (int64, int64, string, bool) {
	return func(x args) (int64, int64, string, bool) {
		q, k, v := x.at(first), x.at(first+1), x.at(first+2)
		if len(q.dims) != 4 || len(k.dims) != 4 || len(v.dims) != 4 {
			return 0, 0, "", false
		}
		var b, h, lq, lk, d, dv int64
		if layout == bhld {
			b, h, lq, d, lk, dv = q.dims[0], q.dims[1], q.dims[2], q.dims[3], k.dims[2], v.dims[3]
		} else {
			b, lq, h, d, lk, dv = q.dims[0], q.dims[1], q.dims[2], q.dims[3], k.dims[1], v.dims[3]
		}
		if k.dims[0] != b || d != k.dims[3] || q.numel() == 0 || k.numel() == 0 || v.numel() == 0 {
			return 0, 0, "", false
		}
		causal := x.at(causalAt).truthy()
		if layout == blhdMask {
			mt := x.at(causalAt).value
			causal = mt != "" && mt != "0"
		}
		flops := prod(2, b, h, lq, lk, d+dv)
		if flops < 0 {
			return 0, 0, "", false
		}
		if causal && lq > 1 && lq <= lk {
			// the part of the score matrix below the diagonal, aligned to
			// its bottom right: all of it for one query, half for a square
			flops = flops * (2*lk - lq) / (2 * lk)
		}
		e := q.elt(2)
		o := b * h * lq * dv
		bytes := (q.numel() + k.numel() + v.numel() + o) * e
		if backward {
			flops = flops * 5 / 2
			bytes *= 2 // dO read; dQ, dK, dV written
		}
		return flops, bytes, dtypeOf(q.typ), true
	}
}

// convMACs is the multiply-adds of a convolution of input in with weight w
// in N·C·spatial layout: each output position of the direct convolution
// takes one weight tensor's worth (per group). For a transposed
// convolution the roles swap: each input position scatters the weight.
func convMACs(in, w opArg, stride, pad, dil []int64, transposed bool) (int64, []int64, bool) {
	sp := len(in.dims) - 2
	if sp < 1 || len(w.dims) != sp+2 || in.numel() == 0 || w.numel() == 0 {
		return 0, nil, false
	}
	pick := func(v []int64, i int, def int64) int64 {
		switch {
		case len(v) == 0:
			return def
		case len(v) == 1:
			return v[0]
		case i < len(v):
			return v[i]
		}
		return def
	}
	out := make([]int64, sp)
	positions := int64(1)
	for i := range sp {
		x, kk := in.dims[2+i], w.dims[2+i]
		s, p, d := pick(stride, i, 1), pick(pad, i, 0), pick(dil, i, 1)
		if s <= 0 || d <= 0 {
			return 0, nil, false
		}
		if s > 1<<20 || p < 0 || p > 1<<20 || d > 1<<20 {
			return 0, nil, false
		}
		if transposed {
			out[i] = (x-1)*s - 2*p + d*(kk-1) + 1
			positions = prod(positions, x)
		} else {
			out[i] = (x+2*p-d*(kk-1)-1)/s + 1
			positions = prod(positions, out[i])
		}
		if out[i] <= 0 || positions < 0 {
			return 0, nil, false
		}
	}
	macs := prod(in.dims[0], positions, w.numel())
	return macs, out, macs >= 0 && numel(out) > 0
}

// convolution(input, weight, bias, stride, padding, dilation, transposed,
// output_padding, groups)
func convolution(x args) (int64, int64, string, bool) {
	in, w := x.at(0), x.at(1)
	transposed := x.at(6).truthy()
	macs, out, ok := convMACs(in, w, x.at(3).ints(), x.at(4).ints(), x.at(5).ints(), transposed)
	if !ok {
		return 0, 0, "", false
	}
	cout := w.dims[0]
	if transposed {
		groups := max(int64(1), first(x.at(8).ints(), 1))
		cout = w.dims[1] * groups
	}
	e := in.elt(2)
	outN := in.dims[0] * cout * numel(out)
	bytes := (in.numel() + w.numel() + outN + x.at(2).numel()) * e
	return 2 * macs, bytes, dtypeOf(in.typ), true
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride,
// padding, dilation, transposed, output_padding, groups, output_mask):
// the input gradient and the weight gradient each cost the forward's
// multiply-adds.
func convolutionBackward(x args) (int64, int64, string, bool) {
	g, in, w := x.at(0), x.at(1), x.at(2)
	macs, _, ok := convMACs(in, w, x.at(4).ints(), x.at(5).ints(), x.at(6).ints(), x.at(7).truthy())
	if !ok {
		return 0, 0, "", false
	}
	mask := strings.Count(strings.ToLower(x.at(10).value), "true")
	if x.at(10).value == "" {
		mask = 2
	}
	grads := int64(min(mask, 2))
	e := in.elt(2)
	bytes := (g.numel() + in.numel() + w.numel()) * e
	if grads > 0 {
		bytes += (in.numel() + w.numel()) * e
	}
	return 2 * macs * grads, bytes, dtypeOf(in.typ), true
}

func first(v []int64, def int64) int64 {
	if len(v) > 0 {
		return v[0]
	}
	return def
}

// softmax(self, dim, half_to_float): read and write every element.
func softmax(flopsPer int64) func(args) (int64, int64, string, bool) {
	return func(x args) (int64, int64, string, bool) {
		in := x.at(0)
		n := in.numel()
		if !in.isT || n == 0 {
			return 0, 0, "", false
		}
		out := in.elt(2)
		if x.at(2).truthy() {
			out = 4
		}
		return flopsPer * n, n*in.elt(2) + n*out, dtypeOf(in.typ), true
	}
}

// softmaxBackward(grad_output, output, dim, input_dtype): two reads, one
// write.
func softmaxBackward(x args) (int64, int64, string, bool) {
	g := x.at(0)
	n := g.numel()
	if !g.isT || n == 0 {
		return 0, 0, "", false
	}
	return 4 * n, 3 * n * g.elt(2), dtypeOf(g.typ), true
}

// norm: the normalised tensor at at, flopsPer FLOPs per element, passes
// full-size reads and writes; the affine weights are small beside it.
func norm(at int, flopsPer, passes int64) func(args) (int64, int64, string, bool) {
	return func(x args) (int64, int64, string, bool) {
		in := x.at(at)
		n := in.numel()
		if !in.isT || n == 0 {
			return 0, 0, "", false
		}
		return flopsPer * n, passes * n * in.elt(2), dtypeOf(in.typ), true
	}
}

// embedding(weight[V,D], indices): one row read and written per index.
func embedding(x args) (int64, int64, string, bool) {
	w, idx := x.at(0), x.at(1)
	if len(w.dims) != 2 || !idx.isT {
		return 0, 0, "", false
	}
	rows := idx.numel()
	return 0, 2*rows*w.dims[1]*w.elt(2) + rows*idx.elt(8), dtypeOf(w.typ), true
}

// embedding_dense_backward(grad_output, indices, num_weights, ...): the
// gradient read and added into a zeroed weight gradient.
func embeddingBackward(x args) (int64, int64, string, bool) {
	g, idx := x.at(0), x.at(1)
	if len(g.dims) == 0 || !idx.isT {
		return 0, 0, "", false
	}
	d := g.dims[len(g.dims)-1]
	e := g.elt(2)
	bytes := 2*g.numel()*e + idx.numel()*idx.elt(8)
	if v := x.at(2).ints(); len(v) == 1 && v[0] > 0 {
		bytes += v[0] * d * e
	}
	return g.numel(), bytes, dtypeOf(g.typ), true
}

// index_select(self, dim, index): the selected slices read and written.
func indexSelect(x args) (int64, int64, string, bool) {
	self, idx := x.at(0), x.at(2)
	dims := x.at(1).ints()
	if len(self.dims) == 0 || !idx.isT || len(dims) != 1 {
		return 0, 0, "", false
	}
	d := dims[0]
	if d < 0 {
		d += int64(len(self.dims))
	}
	if d < 0 || d >= int64(len(self.dims)) || self.dims[d] == 0 {
		return 0, 0, "", false
	}
	slice := self.numel() / self.dims[d]
	return 0, 2*idx.numel()*slice*self.elt(2) + idx.numel()*idx.elt(8), dtypeOf(self.typ), true
}

// fusedOptimizer(params, grads, states...): per parameter flopsPer FLOPs
// and passes fp32 accesses (Adam: parameter, gradient and two moments
// read, parameter and moments written). Tensor lists carry no dtype in a
// trace: fp32 master weights and states are assumed.
func fusedOptimizer(flopsPer, passes int64) func(args) (int64, int64, string, bool) {
	return func(x args) (int64, int64, string, bool) {
		n := x.at(0).listNumel()
		if n == 0 {
			return 0, 0, "", false
		}
		return flopsPer * n, passes * n * 4, "fp32", true
	}
}

// foreach: a torch._foreach_* op over tensor lists: one FLOP per element
// of the first list, every list read and the result written, fp32 assumed.
func foreach(name string) func(args) (int64, int64, string, bool) {
	return func(x args) (int64, int64, string, bool) {
		var n, lists int64
		for _, a := range x {
			if a.list != nil {
				if n == 0 {
					n = a.listNumel()
				}
				lists++
			}
		}
		if n == 0 {
			return 0, 0, "", false
		}
		flops := n
		if strings.HasPrefix(name, "aten::_foreach_copy") || strings.HasPrefix(name, "aten::_foreach_zero") {
			flops = 0
		}
		return flops, (lists + 1) * n * 4, "fp32", true
	}
}

// elementwise: flopsPer FLOPs per output element; outs outputs the size of
// the largest input (0 for an in-place op, which writes its first input).
func elementwise(flopsPer, outs int64) func(args) (int64, int64, string, bool) {
	return func(x args) (int64, int64, string, bool) {
		var read, out int64
		var e int64
		dt := ""
		for _, a := range x {
			if !a.isT {
				continue
			}
			n := a.numel()
			if e == 0 {
				e, dt = a.elt(2), dtypeOf(a.typ)
			}
			read += n * a.elt(2)
			out = max(out, n)
		}
		if out == 0 {
			return 0, 0, "", false
		}
		written := outs * out * e
		if outs == 0 {
			written = x[0].numel() * e
		}
		return flopsPer * out, read + written, dt, true
	}
}

// copy_(self, src): src read, self written.
func copyOp(x args) (int64, int64, string, bool) {
	dst, src := x.at(0), x.at(1)
	if !dst.isT || !src.isT {
		return 0, 0, "", false
	}
	return 0, dst.numel()*dst.elt(2) + src.numel()*src.elt(2), dtypeOf(dst.typ), true
}

// fill_(self, value): self written.
func fillOp(x args) (int64, int64, string, bool) {
	dst := x.at(0)
	if !dst.isT {
		return 0, 0, "", false
	}
	return 0, dst.numel() * dst.elt(2), dtypeOf(dst.typ), true
}

// reduction(self, dim, keepdim, ...): every element read once, one FLOP
// each, and the reduced result written (the whole tensor reduced when no
// dims are given).
func reduction(x args) (int64, int64, string, bool) {
	in := x.at(0)
	n := in.numel()
	if !in.isT || n == 0 {
		return 0, 0, "", false
	}
	out := int64(1)
	if dims := x.at(1).ints(); len(dims) > 0 && len(in.dims) > 0 {
		out = n
		for _, d := range dims {
			if d < 0 {
				d += int64(len(in.dims))
			}
			if d >= 0 && d < int64(len(in.dims)) && in.dims[d] > 0 {
				out /= in.dims[d]
			}
		}
	}
	e := in.elt(2)
	return n, (n + out) * e, dtypeOf(in.typ), true
}
