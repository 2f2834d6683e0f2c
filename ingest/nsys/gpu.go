package nsys

import (
	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/stream"
)

// kernelInfo is what a kernel's names say, once per name pair.
type kernelInfo struct {
	name              int32
	comm              bool
	coll, algo, proto int32
}

// copyInfo is a memcpy's or memset's Kineto-style name and what it says.
type copyInfo struct {
	name, copyKind, hostMem int32
}

// copyKinds spells CUPTI's memcpy kinds (ENUM_CUDA_MEMCPY_OPER) as Kineto
// and gpu.ParseCopy do; the unified-memory kinds read as their direction.
var copyKinds = map[int64]string{1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
	8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "HtoD", 12: "DtoH", 13: "DtoD"}

// memKinds are CUPTI's memory kinds (ENUM_CUDA_MEM_KIND) as Kineto names
// them in "Memcpy HtoD (Pinned -> Device)".
var memKinds = map[int64]string{0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed",
	5: "Device Static", 6: "Managed Static"}

// syncNames are Kineto's names for CUPTI's synchronization types
// (ENUM_CUPTI_SYNC_TYPE).
var syncNames = map[int64]string{0: "Unknown Sync", 1: "Event Sync", 2: "Stream Wait Event", 3: "Stream Sync", 4: "Context Sync"}

// gpuCols are the optional columns every device-side table shares.
var gpuCols = []string{"streamId", "correlationId", "globalPid"}

// gpuUnit finds the unit of a device row and, for a process with several
// devices, remembers which device its correlation id launched on.
func (r *reader) gpuUnit(gpid nullInt, dev int64, corr nullInt) *unit {
	u := r.units[[2]int64{gpid.Int64, dev}]
	if u != nil && corr.Valid && r.multi[gpid.Int64] {
		r.launch[[2]int64{gpid.Int64, corr.Int64}] = u
	}
	return u
}

// gpuRowOf fills the columns every device row has. GPU rows carry the
// device as pid and the stream as tid, as Kineto's GPU events do.
func gpuRowOf(k kind, cat int32, start, end, dev int64, streamID, corr nullInt) row {
	return row{kind: k, cat: cat, start: start, end: end, pid: dev, tid: streamID.Int64,
		device: nullInt{Int64: dev, Valid: true}, stream: streamID, corr: corr}
}

func (r *reader) readKernels() error {
	const table = "CUPTI_ACTIVITY_KIND_KERNEL"
	q, ok, err := r.d.sel(table, []string{"start", "end", "deviceId"}, append(gpuCols,
		"demangledName", "shortName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
		"registersPerThread", "staticSharedMemory", "dynamicSharedMemory"), "")
	if err != nil || !ok {
		return err
	}
	return r.d.each("reading "+table, q, nil, func(scan func(...any) error) error {
		var start, end, dev int64
		var streamID, corr, gpid, demangled, short nullInt
		var dims [6]nullInt
		var regs, static, dynamic nullInt
		if err := scan(&start, &end, &dev, &streamID, &corr, &gpid, &demangled, &short,
			&dims[0], &dims[1], &dims[2], &dims[3], &dims[4], &dims[5], &regs, &static, &dynamic); err != nil {
			return err
		}
		u := r.gpuUnit(gpid, dev, corr)
		if u == nil {
			return nil
		}
		b := u.b
		ki := r.kernel(b, demangled, short)
		k := kKernel
		if ki.comm {
			k = kComm
			b.comm = true
		}
		rw := gpuRowOf(k, b.cat("kernel"), start, end, dev, streamID, corr)
		rw.name = ki.name
		i := b.add(&rw)
		s := b.s
		for j, c := range []*stream.Sparse[int32]{&s.GridX, &s.GridY, &s.GridZ, &s.BlockX, &s.BlockY, &s.BlockZ} {
			if dims[j].Valid {
				c.Set(i, int32(dims[j].Int64))
			}
		}
		if regs.Valid {
			s.Registers.Set(i, int32(regs.Int64))
		}
		// Kineto's "shared memory" is static plus dynamic shared memory.
		if static.Valid || dynamic.Valid {
			s.SharedMem.Set(i, static.Int64+dynamic.Int64)
		}
		if ki.coll != 0 {
			s.CollName.Set(i, ki.coll)
		}
		if ki.algo != 0 {
			s.CollAlgo.Set(i, ki.algo)
		}
		if ki.proto != 0 {
			s.CollProto.Set(i, ki.proto)
		}
		s.MarkDetail(i)
		return nil
	})
}

// kernel names a kernel by its demangled name (what Kineto shows) and
// classifies it by its short name, which has no return type or arguments
// to confuse the NCCL name parser.
func (r *reader) kernel(b *builder, demangled, short nullInt) kernelInfo {
	key := [2]int64{-1, -1}
	if demangled.Valid {
		key[0] = demangled.Int64
	}
	if short.Valid {
		key[1] = short.Int64
	}
	if ki, ok := b.kernels[key]; ok {
		return ki
	}
	full, base := r.strs[key[0]], r.strs[key[1]]
	if full == "" {
		full = base
	}
	if base == "" {
		base = full
	}
	if full == "" {
		full = "unknown kernel"
	}
	ki := kernelInfo{name: b.str.ID(full)}
	if gpu.IsCollectiveKernel(base) || gpu.IsCollectiveKernel(full) {
		ki.comm = true
		c := gpu.ParseCollectiveKernel(base)
		ki.coll, ki.algo, ki.proto = b.optID(c.Name), b.optID(c.Algo), b.optID(c.Protocol)
	}
	b.kernels[key] = ki
	return ki
}

func (r *reader) readMemcpy() error {
	const table = "CUPTI_ACTIVITY_KIND_MEMCPY"
	q, ok, err := r.d.sel(table, []string{"start", "end", "deviceId"}, append(gpuCols, "bytes", "copyKind", "srcKind", "dstKind"), "")
	if err != nil || !ok {
		return err
	}
	return r.d.each("reading "+table, q, nil, func(scan func(...any) error) error {
		var start, end, dev int64
		var streamID, corr, gpid, bytes, ck, src, dst nullInt
		if err := scan(&start, &end, &dev, &streamID, &corr, &gpid, &bytes, &ck, &src, &dst); err != nil {
			return err
		}
		u := r.gpuUnit(gpid, dev, corr)
		if u == nil {
			return nil
		}
		b := u.b
		ci := copyName(b, ck, src, dst)
		rw := gpuRowOf(kMemcpy, b.cat("gpu_memcpy"), start, end, dev, streamID, corr)
		rw.name = ci.name
		i := b.add(&rw)
		b.copyDetails(i, ci, bytes)
		return nil
	})
}

// copyName builds "Memcpy HtoD (Pinned -> Device)", the name Kineto gives
// the same CUPTI record, and reads kind and host memory back from it with
// gpu.ParseCopy so that both readers classify copies identically.
func copyName(b *builder, ck, src, dst nullInt) copyInfo {
	key := [3]int64{-1, -1, -1}
	for i, v := range []nullInt{ck, src, dst} {
		if v.Valid {
			key[i] = v.Int64
		}
	}
	if ci, ok := b.copies[key]; ok {
		return ci
	}
	name := "Memcpy " + orStr(copyKinds[key[0]], "Unknown")
	if s, d := memKinds[key[1]], memKinds[key[2]]; s != "" || d != "" {
		name += " (" + orStr(s, "Unknown") + " -> " + orStr(d, "Unknown") + ")"
	}
	c := gpu.ParseCopy(name)
	ci := copyInfo{name: b.str.ID(name), copyKind: b.optID(c.Kind), hostMem: b.optID(c.HostMem)}
	b.copies[key] = ci
	return ci
}

func orStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (b *builder) copyDetails(i int, ci copyInfo, bytes nullInt) {
	s := b.s
	if bytes.Valid {
		s.Bytes.Set(i, bytes.Int64)
	}
	if ci.copyKind != 0 {
		s.CopyKind.Set(i, ci.copyKind)
	}
	if ci.hostMem != 0 {
		s.HostMem.Set(i, ci.hostMem)
	}
	s.MarkDetail(i)
}

func (r *reader) readMemset() error {
	const table = "CUPTI_ACTIVITY_KIND_MEMSET"
	q, ok, err := r.d.sel(table, []string{"start", "end", "deviceId"}, append(gpuCols, "bytes", "memKind"), "")
	if err != nil || !ok {
		return err
	}
	return r.d.each("reading "+table, q, nil, func(scan func(...any) error) error {
		var start, end, dev int64
		var streamID, corr, gpid, bytes, mk nullInt
		if err := scan(&start, &end, &dev, &streamID, &corr, &gpid, &bytes, &mk); err != nil {
			return err
		}
		u := r.gpuUnit(gpid, dev, corr)
		if u == nil {
			return nil
		}
		b := u.b
		key := [3]int64{-2, -1, -1} // -2: a memset, apart from the memcpy keys
		if mk.Valid {
			key[1] = mk.Int64
		}
		ci, ok := b.copies[key]
		if !ok {
			name := "Memset (" + orStr(memKinds[key[1]], "Device") + ")"
			c := gpu.ParseCopy(name)
			ci = copyInfo{name: b.str.ID(name), hostMem: b.optID(c.HostMem)}
			b.copies[key] = ci
		}
		rw := gpuRowOf(kMemset, b.cat("gpu_memset"), start, end, dev, streamID, corr)
		rw.name = ci.name
		i := b.add(&rw)
		b.copyDetails(i, ci, bytes)
		return nil
	})
}

// readSync reads the GPU-side records of synchronizing calls (stream,
// event and context synchronize, stream wait event) as sync slices.
func (r *reader) readSync() error {
	const table = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
	q, ok, err := r.d.sel(table, []string{"start", "end"}, append(gpuCols, "syncType", "contextId"), "")
	if err != nil || !ok {
		return err
	}
	return r.d.each("reading "+table, q, nil, func(scan func(...any) error) error {
		var start, end int64
		var streamID, corr, gpid, st, ctx nullInt
		if err := scan(&start, &end, &streamID, &corr, &gpid, &st, &ctx); err != nil {
			return err
		}
		// the device of the context the call synchronized, else the
		// process's first device
		dev, ok := r.ctxDev[[2]int64{gpid.Int64, ctx.Int64}]
		if !ok || !ctx.Valid {
			f := r.first[gpid.Int64]
			if f == nil {
				return nil
			}
			dev = int64(f.Device)
		}
		u := r.units[[2]int64{gpid.Int64, dev}]
		if u == nil {
			return nil
		}
		b := u.b
		rw := gpuRowOf(kSync, b.cat("cuda_sync"), start, end, dev, streamID, corr)
		rw.name = b.str.ID(orStr(syncNames[st.Int64], "Unknown Sync"))
		b.add(&rw)
		return nil
	})
}
