package stream

import "testing"

// A narrow table keeps each row's thread as an index, not in PID and TID;
// either way Thread gives every row its own pid and tid back.
func TestThreadsNarrowAndWide(t *testing.T) {
	rows := [][2]int64{{1, 7}, {1, 7}, {2, 7}, {1, 8}, {1, 7}, {-3, 1 << 40}, {2, 7}}
	for _, narrow := range []bool{false, true} {
		s := NewSliceTable(NewStrings(), false)
		if narrow {
			s.ReserveNarrow(0)
		}
		for _, r := range rows {
			s.AppendThread(r[0], r[1])
			s.TS.Append(0)
		}
		for i, r := range rows {
			if pid, tid := s.Thread(i); pid != r[0] || tid != r[1] {
				t.Errorf("narrow=%v row %d: thread (%d, %d), want (%d, %d)", narrow, i, pid, tid, r[0], r[1])
			}
		}
		held := len(s.PID.V) + len(s.TID.V)
		if narrow && (held != 0 || len(s.threads.pairs) != 4) {
			t.Errorf("narrow: %d PID/TID values and %d distinct threads held, want 0 and 4", held, len(s.threads.pairs))
		}
		if !narrow && (held != 2*len(rows) || len(s.threadIdx) != 0) {
			t.Errorf("wide: %d PID/TID values and %d indexes, want %d and 0", held, len(s.threadIdx), 2*len(rows))
		}
		s.DropThreads()
		if len(s.threadIdx)+len(s.PID.V)+len(s.threads.pairs) != 0 {
			t.Errorf("narrow=%v: threads kept after DropThreads", narrow)
		}
	}
}
