package ingest

import (
	"context"
	"sync"
)

// defaultReadMemory is the least that Options.ReadMemory's default lets
// traces being read hold at once: small traces (r512's 1.8 MB ranks) are
// read as many at once as there are readers.
const defaultReadMemory = 128 << 20

// readBigTraces is how many of the input's largest traces
// Options.ReadMemory's default lets be read at once. The inserter takes
// one trace at a time, and a trace takes about a quarter as long to go in
// as to read (syn8 on 16 cores: 3.3 s of reads, 0.76 s of inserts over 8
// files), so a fifth reader of big traces mostly waits for it while
// holding its trace.
const readBigTraces = 4

// readPeak estimates the memory a trace holds while read, waiting to go
// in and going in: twice traceMemory, the parser's columns and the
// timeline pass's working set beside the finished trace (syn8: 8 readers
// of 54 MB ranks held 285 MB of Go heap at once, ~35 MB each).
func readPeak(path string) int64 { return 2 * traceMemory(path) }

// readBudget bounds the estimated memory of the traces in flight in Read:
// a file's share is taken before a reader opens it and given back once
// the inserter is done with its trace.
type readBudget struct {
	mu   sync.Mutex
	free int64
	wake chan struct{}
}

func newReadBudget(total int64) *readBudget {
	return &readBudget{free: total, wake: make(chan struct{})}
}

// take waits until n bytes are free and takes them.
func (b *readBudget) take(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.free >= n {
			b.free -= n
			b.mu.Unlock()
			return nil
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// give returns n bytes.
func (b *readBudget) give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.free += n
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// readShares are each file's share of the read budget, and the budget:
// Options.ReadMemory, or by default room for readBigTraces of the largest
// traces, at least defaultReadMemory, within MemoryBudget when set. Nil
// when there is no budget (ReadMemory < 0). A share is never more than
// the budget, so every file can be read.
func readShares(files []string, opt Options) ([]int64, int64) {
	if opt.ReadMemory < 0 {
		return nil, 0
	}
	shares := make([]int64, len(files))
	var largest int64
	for i, f := range files {
		shares[i] = readPeak(f)
		largest = max(largest, shares[i])
	}
	total := opt.ReadMemory
	if total == 0 {
		total = max(defaultReadMemory, readBigTraces*largest)
		if opt.MemoryBudget > 0 {
			total = min(total, opt.MemoryBudget)
		}
	}
	total = max(total, 1)
	for i := range shares {
		shares[i] = min(shares[i], total)
	}
	return shares, total
}
