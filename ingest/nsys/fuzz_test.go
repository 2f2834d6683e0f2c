package nsys_test

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/trainscope/trainscope/ingest/nsys"
)

// fuzzTexts are NVTX texts the reader treats specially, and some it does not.
var fuzzTexts = []any{nil, "", "ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#x", "aten::mm, seq = 3, op_id = 7, sizes = [[2, 3]]",
	"ncclAllReduce", "NCCL", "forward", "ProfilerStep#99999999999999999999"}

// FuzzNsys builds an export from fuzzed rows (kernels, copies, runtime
// calls and NVTX ranges with odd times, unknown string ids, threads and
// processes that do not exist, ends before starts) and reads it. The reader
// must never panic, and what it returns must keep its invariants.
func FuzzNsys(f *testing.F) {
	f.Add([]byte{0, 10, 0, 5, 0, 1, 1, 1, 2, 0, 0, 0, 1, 20, 0, 8, 0, 1, 5, 1, 0, 0, 0, 0, 2, 0, 0, 100, 0, 1, 2, 1, 2, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 12*64 {
			return
		}
		stmts := []string{
			`INSERT INTO StringIds VALUES (1, 'void gemm_kernel<float>(float*)'), (2, 'gemm_kernel'),
				(3, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)'), (5, 'cudaLaunchKernel_v7000'),
				(7, 'cudaStreamSynchronize_v3020'), (10, 'cudaMemcpyAsync_v3020')`,
			`INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '2023-11-14T22:13:20')`,
			`INSERT INTO PROCESSES VALUES (1677721600, 100, 'python')`,
			`INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA H100 80GB HBM3', 85000000000, 132, 0, 9, 0)`,
		}
		var args [][]any
		for len(data) >= 12 {
			b := data[:12]
			data = data[12:]
			start := int64(int16(binary.LittleEndian.Uint16(b[1:3])))
			var end any = start + int64(int16(binary.LittleEndian.Uint16(b[3:5])))
			if b[5] == 0xff {
				end = nil
			}
			corr, name, dev := int64(b[6]%8), int64(b[7]%12), int64(b[8]%3)
			pid := []int64{1677721600, 3355443200, 0}[b[9]%3]
			tid := pid + int64(b[10]%3)
			switch b[0] % 4 {
			case 0:
				stmts = append(stmts, `INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, 1, 1, 1, 32, 1, 1, 16, 0, 0)`)
				if end == nil {
					end = start
				}
				args = append(args, []any{start, end, dev, int64(b[11] % 4), corr, pid, name, name})
			case 1:
				stmts = append(stmts, `INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0)`)
				args = append(args, []any{start, end, tid, corr, name})
			case 2:
				stmts = append(stmts, `INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?)`)
				etype := []int64{59, 60, 34, 75, 33}[b[11]%5]
				args = append(args, []any{start, end, etype, fuzzTexts[int(b[6])%len(fuzzTexts)], tid, name, int64(b[8] % 2)})
			case 3:
				stmts = append(stmts, `INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, 1, 7, ?, ?, ?, ?, 0, 2)`)
				args = append(args, []any{start, end, dev, corr, pid, int64(b[11]) * 1024, int64(b[7] % 12)})
			}
		}
		path := filepath.Join(t.TempDir(), "fuzz.sqlite")
		writeExportArgs(t, path, schema, stmts[:4], stmts[4:], args)
		traces, err := nsys.ReadFile(path, nsys.Options{})
		if err != nil {
			return // an error is a fine answer; a panic is not
		}
		for _, tr := range traces {
			s := tr.Slices
			for i := range s.Len() {
				if s.SelfDur.Valid(i) && s.SelfDur.V[i] > s.Dur.V[i] {
					t.Fatalf("row %d: self %d > dur %d", i, s.SelfDur.V[i], s.Dur.V[i])
				}
				if s.GPUBusyDur.Valid(i) && (s.GPUBusyDur.V[i] < 0 || s.GPUBusyDur.V[i] > max(s.Dur.V[i], 0)) {
					t.Fatalf("row %d: gpu busy %d of dur %d", i, s.GPUBusyDur.V[i], s.Dur.V[i])
				}
				if s.StackID.Valid(i) && int(s.StackID.V[i]) >= len(s.Stacks) {
					t.Fatalf("row %d: stack %d of %d", i, s.StackID.V[i], len(s.Stacks))
				}
			}
		}
	})
}
