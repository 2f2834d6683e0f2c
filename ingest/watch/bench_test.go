package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkPollIdle is one poll pass over a folder of 500 traces that are
// all already published: the steady state of an agent between profiler
// steps. The per-op time divided by Config.Poll is the idle CPU share.
func BenchmarkPollIdle(b *testing.B) {
	dir := b.TempDir()
	for i := range 500 {
		p := filepath.Join(dir, fmt.Sprintf("worker%d.%d.pt.trace.json", i%8, 1700000000000+i))
		if err := writeFileBytes(p, []byte("{}")); err != nil {
			b.Fatal(err)
		}
	}
	cfg := Config{Dir: dir, Poll: time.Millisecond, Settle: time.Millisecond, GiveUp: time.Second}
	w, err := newWatcher(cfg, func(context.Context, string) error { return nil }, nil, true)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for { // publish everything first, so the timed passes are idle ones
		pending, err := w.poll(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if pending == 0 && len(w.st.Files) == 500 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if pending, err := w.poll(ctx); err != nil || pending != 0 {
			b.Fatalf("poll = %d, %v", pending, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(DefaultPoll.Nanoseconds())*100, "%core@2s")
}

func writeFileBytes(p string, data []byte) error { return os.WriteFile(p, data, 0o644) }
