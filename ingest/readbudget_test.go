package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// budgetSink holds the inserter in its first Insert until a third file
// has been opened (or half a second has passed), and notes how many had
// been: with a read budget of two traces no third may open before the
// inserter is done with the first.
type budgetSink struct {
	opened *atomic.Int32
	once   sync.Once
	most   int32
	tables atomic.Int32
}

func (s *budgetSink) Insert(_ context.Context, _ string, rec arrow.RecordBatch) error {
	s.once.Do(func() {
		for end := time.Now().Add(500 * time.Millisecond); s.opened.Load() < 3 && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
		}
		s.most = s.opened.Load()
	})
	s.tables.Add(1)
	return nil
}

// rankFiles writes n small Kineto traces of ranks 0..n-1, each padded to
// ~64 KB of JSON.
func rankFiles(t *testing.T, n int) []string {
	dir := t.TempDir()
	pad := strings.Repeat(" ", 64<<10)
	var files []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("rank-%d.json", i))
		body := fmt.Sprintf(`{"distributedInfo": {"rank": %d, "world_size": %d},%s"traceEvents": [`+
			`{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 10}]}`, i, n, pad)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	return files
}

// A read budget of two traces keeps a third from being opened while the
// inserter works on the first, however many readers there are (192
// cores), and every file is still read; a budget below one trace reads
// them one at a time.
func TestReadBudgetBoundsTracesInFlight(t *testing.T) {
	files := rankFiles(t, 12)
	share := readPeak(files[0])
	if share == 0 {
		t.Fatal("no share for a 64 KB trace")
	}
	for _, c := range []struct {
		name   string
		budget int64
		most   int32
	}{
		{"two traces", 2 * share, 2},
		{"below one trace", share / 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var opened atomic.Int32
			checkFile = func(p string) error { opened.Add(1); return checkRegular(p) }
			defer func() { checkFile = checkRegular }()
			sink := &budgetSink{opened: &opened}
			stats, err := Read(context.Background(), sink, files, Options{RunID: "r", Rank: -1, Workers: 192, ReadMemory: c.budget})
			if err != nil {
				t.Fatal(err)
			}
			if sink.most > c.most {
				t.Errorf("%d files opened while the first trace went in, want at most %d", sink.most, c.most)
			}
			if got := opened.Load(); got != int32(len(files)) {
				t.Errorf("%d files opened, want %d", got, len(files))
			}
			for _, f := range stats.Files {
				if f.Skipped != "" || f.Events == 0 {
					t.Errorf("%s: skipped %q, %d events", f.Path, f.Skipped, f.Events)
				}
			}
		})
	}
}

// The default read budget: room for readBigTraces of the largest traces,
// at least defaultReadMemory, within MemoryBudget; a file's share is
// never more than the budget; ReadMemory < 0 is no budget.
func TestReadShares(t *testing.T) {
	dir := t.TempDir()
	sized := func(name string, size int64) string { return sizedFile(t, dir, name, size) }
	small, big := sized("small.json", 1<<20), sized("big.json", 500<<20)
	bigShare := readPeak(big)
	for _, c := range []struct {
		name   string
		files  []string
		opt    Options
		budget int64
	}{
		{"small traces", []string{small, small}, Options{}, defaultReadMemory},
		{"a big trace", []string{small, big}, Options{}, readBigTraces * bigShare},
		{"within MemoryBudget", []string{small, big}, Options{MemoryBudget: 2 * bigShare}, 2 * bigShare},
		{"read_memory", []string{small, big}, Options{ReadMemory: 64 << 20}, 64 << 20},
	} {
		shares, budget := readShares(c.files, c.opt)
		if budget != c.budget {
			t.Errorf("%s: budget %d, want %d", c.name, budget, c.budget)
		}
		for i, s := range shares {
			if s > budget || s <= 0 {
				t.Errorf("%s: %s's share %d, budget %d", c.name, c.files[i], s, budget)
			}
		}
	}
	if shares, _ := readShares([]string{big}, Options{ReadMemory: -1}); shares != nil {
		t.Errorf("ReadMemory -1: shares %v, want none", shares)
	}
}
