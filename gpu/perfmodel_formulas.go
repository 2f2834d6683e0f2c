package gpu

import "strings"

// The formulas of the performance model's table (perfmodel.go), one per
// kind of operator. Each reads its shapes by position and says ok=false
// when they do not fit it.

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
