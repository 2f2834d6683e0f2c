package stream

// A table built narrow (ReserveNarrow: kineto's first pass over a trace
// too big to hold) keeps each row's thread as an index into a list of the
// (pid, tid) pairs it has seen, 4 bytes a row instead of PID's and TID's
// 16: a 3 GB trace's 8.6M rows held 100 MB less while its whole-file
// resolution ran. Thread reads either form.

// threadList is the (pid, tid) pairs of a narrow table, and where each is.
type threadList struct {
	pairs [][2]int64
	index map[[2]int64]int32
	last  int32 // the last pair appended: rows come in runs of one thread
}

// AppendThread appends a row's thread: to PID and TID, or to the thread
// index of a table built narrow (ReserveNarrow).
func (t *SliceTable) AppendThread(pid, tid int64) {
	if !t.narrow {
		t.PID.Append(pid)
		t.TID.Append(tid)
		return
	}
	l := &t.threads
	k := [2]int64{pid, tid}
	if len(l.pairs) == 0 || l.pairs[l.last] != k {
		i, ok := l.index[k]
		if !ok {
			if l.index == nil {
				l.index = map[[2]int64]int32{}
			}
			i = int32(len(l.pairs))
			l.pairs = append(l.pairs, k)
			l.index[k] = i
		}
		l.last = i
	}
	t.threadIdx = append(t.threadIdx, l.last)
}

// Thread is row i's pid and tid.
func (t *SliceTable) Thread(i int) (pid, tid int64) {
	if t.narrow {
		p := t.threads.pairs[t.threadIdx[i]]
		return p[0], p[1]
	}
	return t.PID.V[i], t.TID.V[i]
}
