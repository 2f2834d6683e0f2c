package trace

import (
	"testing"

	"github.com/trainscope/trainscope/stream"
)

// Derive resolves steps and launches the same way for every reader: host
// work by its start, GPU work by the call that launched it; sync rows
// follow their call only when the reader says so.
func TestDerive(t *testing.T) {
	for _, syncLaunched := range []bool{false, true} {
		str := stream.NewStrings()
		for _, k := range []string{stream.KindKernel, stream.KindSync, stream.KindRuntime, stream.KindCPUOp, stream.KindOther} {
			str.ID(k)
		}
		s := stream.NewSliceTable(str, true)
		add := func(kind, name string, ts, dur, tid int64, dev int32, corr int64) {
			s.Kind.Append(str.ID(kind))
			s.Cat.Append(str.ID(kind))
			s.Name.Append(str.ID(name))
			s.TS.Append(ts)
			s.Dur.Append(dur)
			s.PID.Append(1)
			s.TID.Append(tid)
			s.Device.AppendOpt(dev, dev >= 0)
			s.Stream.AppendOpt(7, dev >= 0)
			s.Correlation.AppendOpt(corr, corr > 0)
			s.ExternalID.AppendNull()
		}
		add(stream.KindRuntime, "cudaLaunchKernel", 100, 10, 1, -1, 7)       // 0: step 1
		add(stream.KindKernel, "gemm", 150, 50, 7, 0, 7)                     // 1: step 1 by its launch
		add(stream.KindRuntime, "cudaStreamSynchronize", 300, 100, 1, -1, 8) // 2: step 2
		add(stream.KindSync, "Stream Sync", 310, 80, 7, 0, 8)                // 3: step 2 when sync follows its call
		add(stream.KindCPUOp, "aten::mm", 90, 30, 1, -1, 0)                  // 4: step 1, self 20
		add(stream.KindOther, "late", 9000, 10, 1, -1, 0)                    // 5: not in the span
		tr := &Trace{Str: str, Slices: s, Counts: map[string]int{}}
		tr.Counters.Str = str
		launch := Derive(tr, map[int32]*Span{2: {200, 500}, 1: {0, 200}}, DeriveOptions{SyncLaunched: syncLaunched})
		s.LaunchTS = launch.Dense(s.Len())

		if got := tr.Steps.Step.V; len(got) != 2 || got[0] != 1 || got[1] != 2 {
			t.Errorf("steps %v, want [1 2] in order of start", got)
		}
		step := func(i int) int32 {
			if !s.Step.Valid(i) {
				return -1
			}
			return s.Step.V[i]
		}
		wantSync := int32(-1)
		if syncLaunched {
			wantSync = 2
		}
		for i, want := range []int32{1, 1, 2, wantSync, 1, -1} {
			if step(i) != want {
				t.Errorf("sync launched %v: row %d step %d, want %d", syncLaunched, i, step(i), want)
			}
		}
		if !s.LaunchTS.Valid(1) || s.LaunchTS.V[1] != 100 || s.LaunchTS.Valid(0) || s.LaunchTS.Valid(3) != syncLaunched {
			t.Errorf("sync launched %v: launch times %v (valid 1: %v, 3: %v)", syncLaunched, s.LaunchTS.V, s.LaunchTS.Valid(1), s.LaunchTS.Valid(3))
		}
		if !s.SelfDur.Valid(4) || s.SelfDur.V[4] != 20 {
			t.Errorf("self time of the operator %d, want 20", s.SelfDur.V[4])
		}
		if tr.StartNS != 90 || tr.EndNS != 400 || tr.Counts["steps"] != 2 {
			t.Errorf("span %d-%d, steps %d; want 90-400, 2", tr.StartNS, tr.EndNS, tr.Counts["steps"])
		}
	}
}
