package kineto

// Communication kernels named by the host operator that issued them, with
// the message size and dtype that operator records.

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/stream"
)

// runtimeByCorrelation maps the correlation ids that the kernels of refs
// carry to the runtime call rows with them (the last, if several): only
// those, not every launch's (a 3 GB trace's map of all held 45 MB at the
// end of its first pass, its peak).
func (b *builder) runtimeByCorrelation(refs []collRef) map[int64]int {
	s := b.s
	out := map[int64]int{}
	for _, k := range refs {
		if s.Correlation.Valid(k.row) {
			out[s.Correlation.V[k.row]] = -1
		}
	}
	rt := b.kinds[stream.KindRuntime]
	for i := range s.Len() {
		if s.Kind.V[i] != rt || !s.Correlation.Valid(i) {
			continue
		}
		if _, ok := out[s.Correlation.V[i]]; ok {
			out[s.Correlation.V[i]] = i
		}
	}
	for c, i := range out {
		if i < 0 {
			delete(out, c)
		}
	}
	return out
}

// stackCollective is the collective a c10d:: or nccl: operator enclosing
// the runtime call that launched kernel row names.
func (b *builder) stackCollective(byCorr map[int64]int, row int) (int32, bool) {
	s := b.s
	if !s.Correlation.Valid(row) {
		return 0, false
	}
	rt, ok := byCorr[s.Correlation.V[row]]
	if !ok || !s.StackID.Valid(rt) {
		return 0, false
	}
	for id := s.StackID.V[rt]; id >= 0; id = s.Stacks[id].Parent {
		name := b.str.Get(s.Stacks[id].Name)
		for _, p := range []string{"c10d::", "nccl:"} {
			if rest, ok := strings.CutPrefix(name, p); ok {
				if c := gpu.NormalizeCollective(rest); c != "" {
					return b.str.ID(c), true
				}
			}
		}
	}
	return 0, false
}

// collRef is a communication kernel whose collective may be named better
// by the host operator that launched it.
type collRef struct {
	row int
	ext int64
	had bool // the kernel name gave a collective (a CollName entry exists)
}

// opColl is what a host operator that issued a collective says of it:
// its name and, where record_param_comms gives them, its message size.
type opColl struct {
	coll          int32
	in, out       int64 // -1 when not given
	dtype, groups int32 // 0 when not given
}

// noteCollective remembers what finish's nameCollectives needs of a row
// with an External id: the collective its host operator issued, or a
// communication kernel to name by its operator.
func (b *builder) noteCollective(a *eventArgs, e *event, coll int32, gpuSide, comm bool, row int) {
	switch {
	case !gpuSide && coll != 0:
		// the operator that issued a collective names it the way the
		// job called it (record_param_comms, c10d::alltoall_)
		if b.opColl == nil {
			b.opColl = map[int64]opColl{}
		}
		op := opColl{coll: coll, in: -1, out: -1}
		if a.has&aInElems != 0 {
			op.in = a.inElems
		}
		if a.has&aOutElems != 0 {
			op.out = a.outElems
		}
		if a.has&aDtype != 0 && len(a.dtype) > 0 {
			op.dtype = b.intern(a.dtype)
		}
		if op.in < 0 && a.has&aInputDims != 0 {
			// c10d and nccl: operators give their tensor's shape
			if n, dt, ok := firstTensor(a.inputDims, a.inputType); ok {
				op.in = n
				if op.dtype == 0 && dt != "" {
					op.dtype = b.str.ID(dt)
				}
			}
		}
		if a.has&aGroupSize != 0 {
			op.groups = int32(a.groupSize)
		}
		b.opColl[a.externalID] = op
	case comm && a.has&aCollName == 0:
		// the kernel's own name is NCCL's: all-to-all runs as SendRecv
		b.kernelColl = append(b.kernelColl, collRef{row: row, ext: a.externalID, had: coll != 0})
	}
}

// nameCollectives gives communication kernels the collective of the host
// operator with their External id: an all_to_all that NCCL runs as
// SendRecv kernels is an all-to-all, not pipeline-parallel sends.
//
// Older traces number kernels apart from their operators (a kernel's
// External id is its correlation id); there the collective comes from the
// c10d:: or nccl: operator that encloses the launching runtime call on its
// thread (its call stack, which AssignSelfTimes has built).
func (b *builder) nameCollectives() {
	if len(b.kernelColl) == 0 {
		return
	}
	var add sparseFill[int32]
	var in, out sparseFill[int64]
	var dtype, groups sparseFill[int32]
	// the kernels whose collective comes from their launch's call stack,
	// and the runtime calls that launched them
	var fromStack []collRef
	for _, k := range b.kernelColl {
		if _, ok := b.opColl[k.ext]; !ok {
			fromStack = append(fromStack, k)
		}
	}
	var byCorr map[int64]int
	if len(fromStack) > 0 {
		byCorr = b.runtimeByCorrelation(fromStack)
	}
	col := &b.s.CollName
	for _, k := range b.kernelColl {
		op, ok := b.opColl[k.ext]
		if ok {
			// the kernel carries no message size of its own: take the
			// operator's, so bandwidth is known where the trace has it
			row := int32(k.row)
			in.add(row, op.in, op.in >= 0)
			out.add(row, op.out, op.out >= 0)
			dtype.add(row, op.dtype, op.dtype != 0)
			groups.add(row, op.groups, op.groups != 0)
		} else {
			op.coll, ok = b.stackCollective(byCorr, k.row)
		}
		if !ok {
			continue
		}
		if !k.had {
			add.add(int32(k.row), op.coll, true)
			continue
		}
		i := sort.Search(len(col.Rows), func(i int) bool { return int(col.Rows[i]) >= k.row })
		if i < len(col.Rows) && int(col.Rows[i]) == k.row {
			col.Vals[i] = op.coll
		}
	}
	add.into(&col.Sparse)
	in.into(&b.s.CollInElems)
	out.into(&b.s.CollOutElems)
	dtype.into(&b.s.CollDtype.Sparse)
	groups.into(&b.s.CollGroupSize)
}

// firstTensor is the element count and type of an operator's first input
// from its Input Dims and Input type arguments.
func firstTensor(dimsJSON, typesJSON []byte) (int64, string, bool) {
	var dims [][]int64
	if json.Unmarshal(dimsJSON, &dims) != nil || len(dims) == 0 || len(dims[0]) == 0 {
		return 0, "", false
	}
	n := int64(1)
	for _, d := range dims[0] {
		if d < 0 || d > 1<<40 || n > (1<<62)/max(d, 1) {
			return 0, "", false
		}
		n *= d
	}
	var types []string
	dt := ""
	if json.Unmarshal(typesJSON, &types) == nil && len(types) > 0 {
		dt = types[0]
	}
	return n, dt, true
}

// sparseFill gathers values for rows of a sparse column, to merge in once.
type sparseFill[T int32 | int64] struct {
	rows []int32
	vals []T
}

func (f *sparseFill[T]) add(row int32, v T, ok bool) {
	if ok {
		f.rows, f.vals = append(f.rows, row), append(f.vals, v)
	}
}

// into fills the rows that have no value yet (kernelColl is in row order).
func (f *sparseFill[T]) into(col *stream.Sparse[T]) {
	if !sort.SliceIsSorted(f.rows, func(i, j int) bool { return f.rows[i] < f.rows[j] }) {
		idx := make([]int, len(f.rows))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(i, j int) bool { return f.rows[idx[i]] < f.rows[idx[j]] })
		rows, vals := make([]int32, len(idx)), make([]T, len(idx))
		for i, k := range idx {
			rows[i], vals[i] = f.rows[k], f.vals[k]
		}
		f.rows, f.vals = rows, vals
	}
	col.Fill(f.rows, f.vals)
}
