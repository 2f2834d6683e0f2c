package ingest

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
)

// readers is how many files Read reads at once: Workers (0: GOMAXPROCS),
// no more than there are files, and as many as MemoryBudget holds.
func readers(files []string, opt Options) int {
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(files)))
	if opt.MemoryBudget <= 0 {
		return workers
	}
	var largest int64
	for _, f := range files {
		largest = max(largest, traceMemory(f))
	}
	if largest > 0 && int64(workers+1)*largest > opt.MemoryBudget {
		fit := max(1, int(opt.MemoryBudget/largest)-1)
		if fit < workers && opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "reading %d files at once, not %d: each may hold ~%d MB while read, within a budget of %d MB\n",
				fit, workers, largest>>20, opt.MemoryBudget>>20)
		}
		workers = min(workers, fit)
	}
	return workers
}

// noteReadBudget tells Progress when the read budget (readShares) keeps
// the largest traces from being read one a reader.
func noteReadBudget(opt Options, shares []int64, budget int64, workers int) {
	largest := slices.Max(append(shares, 1))
	if fit := max(1, int(budget/largest)); fit < workers && opt.Progress != nil {
		fmt.Fprintf(opt.Progress, "reading up to %d of the largest files at once, not %d: each may hold ~%d MB while read, within a read budget of %d MB\n",
			fit, workers, largest>>20, budget>>20)
	}
}

// traceMemory estimates the memory a file's trace holds while read and
// waiting to be inserted: ~0.3 bytes per byte of JSON (syn8's 53.7 MB
// ranks held 14 MB each, bench/RESULTS.md), the JSON size of a .gz from
// its trailer. A trace of twoPassBytes or more is read in chunks, so no
// more than that size's share counts. 0 when the file cannot be read.
func traceMemory(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return 0 // reading it reports why; a pipe must not be opened
	}
	size := fi.Size()
	if strings.HasSuffix(path, ".gz") {
		size = gzipSize(path, size)
	}
	return min(size, twoPassBytes) * 3 / 10
}

// gzipSize is a gzip file's uncompressed size from its trailer (ISIZE,
// the size modulo 4 GiB); when that is less than the compressed size (a
// wrapped size, or several members), ten times the compressed size.
func gzipSize(path string, compressed int64) int64 {
	guess := 10 * compressed
	f, err := os.Open(path)
	if err != nil {
		return guess
	}
	defer f.Close()
	var tail [4]byte
	if compressed < 18 {
		return guess
	}
	if _, err := f.ReadAt(tail[:], compressed-4); err != nil {
		return guess
	}
	n := int64(tail[0]) | int64(tail[1])<<8 | int64(tail[2])<<16 | int64(tail[3])<<24
	if n < compressed {
		return guess
	}
	return n
}
