package duck_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// A long-lived file store checkpoints once its write-ahead log passes
// Options.CheckpointWAL; a bulk store keeps the whole log until Close.
func TestCheckpointWALBoundsTheLog(t *testing.T) {
	ctx := context.Background()
	walAfter := func(limit string) int64 {
		path := filepath.Join(t.TempDir(), "t.duckdb")
		st, err := duck.Open(ctx, path, duck.Options{CheckpointWAL: limit})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		mustExec(t, st, "CREATE TABLE w (i BIGINT, s VARCHAR)")
		for k := range 20 { // 20 commits of 50K rows: ~1 MB of log each
			mustExec(t, st, "INSERT INTO w SELECT i, 'row ' || i FROM range(?, ?) t(i)", k*50_000, (k+1)*50_000)
		}
		if n := queryInt(t, st, "SELECT count(*) FROM w"); n != 1_000_000 {
			t.Fatalf("%d rows, want 1000000", n)
		}
		fi, err := os.Stat(path + ".wal")
		if os.IsNotExist(err) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	bulk, bounded := walAfter(""), walAfter("2MB")
	t.Logf("write-ahead log after 20 commits: %d bytes unbounded, %d with CheckpointWAL 2MB", bulk, bounded)
	if bulk < 8<<20 {
		t.Fatalf("the bulk store's log holds %d bytes: the test writes too little to tell", bulk)
	}
	if bounded > 4<<20 {
		t.Errorf("with CheckpointWAL 2MB the log grew to %d bytes", bounded)
	}
}

// A fork inserts through Arrow beside its store, each in its own
// transaction.
func TestForkInsertsBesideItsStore(t *testing.T) {
	ctx := context.Background()
	st := openMem(t)
	f, err := st.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for k, s := range []*duck.Store{st, f} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = s.Tx(ctx, func() error {
				for i := range 5 {
					var steps stream.StepTable
					steps.Step.Append(int32(i))
					steps.Start.Append(int64(i) * 100)
					steps.End.Append(int64(i)*100 + 50)
					rec := steps.Record("run-1", int32(k))
					err := s.Insert(ctx, "steps", rec)
					rec.Release()
					if err != nil {
						return err
					}
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("connection %d: %v", k, err)
		}
	}
	checkRows(t, st, []string{"0|5", "1|5"}, "SELECT rank, count(*) FROM steps GROUP BY rank ORDER BY rank")
}

// A fork past Options.MaxConns fails at once with ErrNoConn instead of
// waiting for a connection (its holder may be the goroutine that waits);
// closing a fork hands its connection back.
func TestForkNeverWaits(t *testing.T) {
	ctx := context.Background()
	for _, max := range []int{1, 3, 0} {
		st, err := duck.Open(ctx, "", duck.Options{MaxConns: max})
		if err != nil {
			t.Fatal(err)
		}
		want := max - 1
		if max == 0 {
			want = duck.DefaultMaxConns - 1
		}
		if st.Forks() != want {
			t.Errorf("MaxConns %d: %d forks allowed, want %d", max, st.Forks(), want)
		}
		var forks []*duck.Store
		for range want {
			f, err := st.Fork(ctx)
			if err != nil {
				t.Fatalf("MaxConns %d: fork %d: %v", max, len(forks)+1, err)
			}
			forks = append(forks, f)
		}
		if _, err := st.Fork(ctx); !errors.Is(err, duck.ErrNoConn) {
			t.Fatalf("MaxConns %d: a fork past the limit: %v, want ErrNoConn", max, err)
		}
		if want > 0 {
			forks[0].Close()
			forks[0].Close() // twice hands back one connection, not two
			f, err := st.Fork(ctx)
			if err != nil {
				t.Fatalf("MaxConns %d: a fork after one closed: %v", max, err)
			}
			if _, err := st.Fork(ctx); !errors.Is(err, duck.ErrNoConn) {
				t.Fatalf("MaxConns %d: after a double close, a second fork: %v, want ErrNoConn", max, err)
			}
			forks[0] = f
		}
		for _, f := range forks {
			f.Close()
		}
		st.Close()
	}
}
