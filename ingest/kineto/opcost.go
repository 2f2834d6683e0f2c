package kineto

// Host operators with a performance model: their cost from the recorded
// shapes (gpu.OpCost), and the GPU time of the kernels launched inside
// them, so that the roofline needs no join from kernels back to operators.

import (
	"cmp"
	"encoding/binary"
	"slices"
	"sync"

	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/stream"
)

// opCostRow is a modelled operator call, written into the table's op
// columns once the kernels it launched are known.
type opCostRow struct {
	row     int32
	cost    gpu.Cost
	shape   int32 // string id of the compact Input Dims
	gpuDur  int64 // kernels launched inside it
	kernels int32
	longest int32 // name id of the longest of them
	longDur int64
	dropped bool // encloses a modelled call of the same class, which counts instead
}

// costMemo is gpu.OpCost's answer for one operator and its raw shapes.
type costMemo struct {
	cost gpu.Cost
	ok   bool
}

// opCost computes the cost of operator row from its recorded shapes, and
// reports whether it has one. A training step calls the same operators on
// the same shapes as the one before: each operator and raw Input Dims,
// Input type and Concrete Inputs is parsed and costed once (the parse was
// 8% of reading bench/tmp/r512's traces).
func (b *builder) opCost(row int, nameID int32, a *eventArgs) bool {
	// 0xff is no byte of UTF-8 JSON text: the parts cannot run together
	k := binary.LittleEndian.AppendUint32(b.memoKey[:0], uint32(nameID))
	k = append(append(k, a.inputDims...), 0xff)
	k = append(append(k, a.inputType...), 0xff)
	k = append(k, a.concrete...)
	b.memoKey = k
	m, seen := b.opMemo[string(k)]
	if !seen {
		m = b.sharedOpCost(b.str.Get(nameID), a)
		b.opMemo[string(k)] = m
	}
	if !m.ok {
		return false
	}
	c := m.cost
	shape, ok := b.shapes[string(a.inputDims)]
	if !ok {
		shape = b.str.ID(gpu.CompactShape(a.inputDims))
		b.shapes[string(a.inputDims)] = shape
	}
	b.costs = append(b.costs, opCostRow{row: int32(row), cost: c, shape: shape})
	if b.slim {
		b.modelledRows = append(b.modelledRows, int32(row))
	}
	return true
}

// opCosts is gpu.OpCost's answers across the traces of the process, by
// operator name and raw shapes: the ranks of a run call the same operators
// on the same shapes, and each trace's own memo (opMemo, by name id) starts
// empty. Costing them again in every file was 0.74 s of CPU in r512's
// 512 files. It keeps at most maxSharedOpCosts answers.
var opCosts = struct {
	sync.Mutex
	m map[string]costMemo
}{m: map[string]costMemo{}}

const maxSharedOpCosts = 1 << 16

// sharedOpCost is gpu.OpCost of operator name on a's shapes, from opCosts
// when an earlier trace costed it. The key is built in the builder's
// sharedKey.
func (b *builder) sharedOpCost(name string, a *eventArgs) costMemo {
	// 0xff is no byte of UTF-8 JSON text: the parts cannot run together
	k := append(b.sharedKey[:0], name...)
	k = append(append(k, 0xff), a.inputDims...)
	k = append(append(k, 0xff), a.inputType...)
	k = append(append(k, 0xff), a.concrete...)
	b.sharedKey = k
	opCosts.Lock()
	m, ok := opCosts.m[string(k)]
	opCosts.Unlock()
	if ok {
		return m
	}
	m.cost, m.ok = gpu.OpCost(name, a.inputDims, a.inputType, a.concrete)
	opCosts.Lock()
	if len(opCosts.m) < maxSharedOpCosts {
		opCosts.m[string(k)] = m
	}
	opCosts.Unlock()
	return m
}

// assignOpCosts gives each modelled operator the GPU time and count of the
// kernels and memsets launched inside it (by the runtime or driver call
// with the activity's correlation id, nested in the operator on its
// thread; the innermost modelled operator takes them), drops an operator
// that encloses one of the same class (aten::_scaled_dot_product_flash_
// attention around aten::_flash_attention_forward: the work is counted
// once, at the call that launched it), and writes the op columns.
func (b *builder) assignOpCosts() {
	if len(b.costs) == 0 {
		return
	}
	s := b.s
	gpuWork := map[int32]bool{b.kinds[stream.KindKernel]: true, b.kinds[stream.KindMemset]: true}
	launch := map[int32]bool{b.kinds[stream.KindRuntime]: true, b.kinds[stream.KindDriver]: true}
	// correlation -> GPU time launched under it
	work := map[int64]int64{}
	count := map[int64]int32{}
	type named struct {
		name int32
		dur  int64
	}
	longest := map[int64]named{} // correlation -> its longest activity
	for i := range s.Len() {
		if gpuWork[s.Kind.V[i]] && s.Correlation.Valid(i) {
			c := s.Correlation.V[i]
			work[c] += s.Dur.V[i]
			count[c]++
			if l, ok := longest[c]; !ok || s.Dur.V[i] > l.dur {
				longest[c] = named{s.Name.V[i], s.Dur.V[i]}
			}
		}
	}
	type thread struct{ pid, tid int64 }
	type launchAt struct {
		ts   int64
		corr int64
	}
	ops := map[thread][]int{} // indexes into b.costs
	for k, c := range b.costs {
		pid, tid := s.Thread(int(c.row))
		ops[thread{pid, tid}] = append(ops[thread{pid, tid}], k)
	}
	launches := map[thread][]launchAt{}
	for i := range s.Len() {
		if !launch[s.Kind.V[i]] || !s.Correlation.Valid(i) {
			continue
		}
		corr := s.Correlation.V[i]
		if _, ok := work[corr]; !ok {
			continue
		}
		pid, tid := s.Thread(i)
		k := thread{pid, tid}
		if _, ok := ops[k]; ok {
			launches[k] = append(launches[k], launchAt{s.TS.V[i], corr})
		}
	}
	end := func(k int) int64 { r := b.costs[k].row; return s.TS.V[r] + s.Dur.V[r] }
	start := func(k int) int64 { return s.TS.V[b.costs[k].row] }
	for th, list := range ops {
		slices.SortStableFunc(list, func(x, y int) int {
			return cmp.Or(cmp.Compare(start(x), start(y)), cmp.Compare(end(y), end(x)))
		})
		ls := launches[th]
		slices.SortFunc(ls, func(x, y launchAt) int { return cmp.Compare(x.ts, y.ts) })
		var stack []int
		next := 0
		// open the operators that start at or before t, closing those that
		// ended; a same-class operator inside another drops the outer one
		advance := func(t int64) {
			for next < len(list) && start(list[next]) <= t {
				k := list[next]
				next++
				for len(stack) > 0 && end(stack[len(stack)-1]) <= start(k) {
					stack = stack[:len(stack)-1]
				}
				if n := len(stack); n > 0 && end(k) <= end(stack[n-1]) && b.costs[stack[n-1]].cost.Class == b.costs[k].cost.Class {
					b.costs[stack[n-1]].dropped = true
				}
				stack = append(stack, k)
			}
			for len(stack) > 0 && end(stack[len(stack)-1]) <= t {
				stack = stack[:len(stack)-1]
			}
		}
		for _, l := range ls {
			advance(l.ts)
			if n := len(stack); n > 0 && start(stack[n-1]) <= l.ts {
				c := &b.costs[stack[n-1]]
				c.gpuDur += work[l.corr]
				c.kernels += count[l.corr]
				if k := longest[l.corr]; c.kernels == count[l.corr] || k.dur > c.longDur {
					c.longest, c.longDur = k.name, k.dur
				}
			}
		}
		advance(1<<63 - 1)
	}
	for _, c := range b.costs {
		if c.dropped {
			continue
		}
		r := int(c.row)
		if c.cost.FLOPs > 0 {
			s.Flops.Set(r, c.cost.FLOPs)
		}
		if c.cost.Dtype != "" {
			s.FlopsDtype.Set(r, b.optID(c.cost.Dtype))
		}
		s.OpClass.Set(r, b.optID(c.cost.Class))
		s.OpShape.Set(r, c.shape)
		s.OpBytes.Set(r, c.cost.Bytes)
		if c.kernels > 0 {
			s.OpGPUDur.Set(r, c.gpuDur)
			s.OpKernels.Set(r, c.kernels)
			s.OpKernel.Set(r, c.longest)
		}
	}
	b.costs = nil
}
