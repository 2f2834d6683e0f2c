package ingest

import (
	"context"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// The huge-trace memory limit holds while a huge batch goes in, and only
// then: an invalid limit fails that flush and no other, and a valid one
// leaves the store's own limit in place afterwards.
func TestHugeTraceMemoryLimit(t *testing.T) {
	ctx := context.Background()
	limit := func(st *duck.Store) string {
		var l string
		if err := st.Conn().QueryRowContext(ctx, "SELECT current_setting('memory_limit')").Scan(&l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, tc := range []struct {
		name, hugeLimit string
		rows            int
		wantErr         bool
	}{
		{"small batch, invalid limit: not used", "lots", 100, false},
		{"huge batch, invalid limit: used, fails", "lots", hugeBatch, true},
		{"huge batch, valid limit", "256MB", hugeBatch, false},
		{"huge batch, no limit", "", hugeBatch, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := duck.Open(ctx, "", duck.Options{MemoryLimit: "512MB"})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			before := limit(st)
			s := newBufferedSink(st, 1<<30)
			s.hugeLimit = tc.hugeLimit
			rec := stepRows(tc.rows).Record("r", 0)
			defer rec.Release()
			if err := s.Insert(ctx, "steps", rec); err != nil {
				t.Fatal(err)
			}
			err = s.Flush(ctx)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Flush: %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && !strings.Contains(err.Error(), "lots") {
				t.Errorf("error %v does not name the limit", err)
			}
			if after := limit(st); after != before {
				t.Errorf("memory limit after the flush %q, want the store's %q", after, before)
			}
			want := int64(tc.rows)
			if tc.wantErr {
				want = 0
			}
			var n int64
			if err := st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM steps").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Errorf("steps rows %d, want %d", n, want)
			}
		})
	}
}

// Into a staged store (analyze's), a large batch goes in at once; small
// ones wait for the row limit as before.
func TestStagedStoreFlushesEachTrace(t *testing.T) {
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{Staged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	count := func(q string) int {
		var n int
		if err := st.Conn().QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	s := newBufferedSink(st, flushRows(st))
	rec := stepRows(10).Record("small", 0)
	defer rec.Release()
	if err := s.Insert(ctx, "steps", rec); err != nil {
		t.Fatal(err)
	}
	if n := count("SELECT count(*) FROM steps"); n != 0 {
		t.Errorf("a small batch went in at once (%d rows)", n)
	}
	big := stepRows(largeBatch).Record("large", 0)
	defer big.Release()
	if err := s.Insert(ctx, "steps", big); err != nil {
		t.Fatal(err)
	}
	if n := count("SELECT count(*) FROM steps"); n != 10+largeBatch {
		t.Errorf("%d rows after a large batch, want %d: it waited", n, 10+largeBatch)
	}
}

// Into a staged store, many small traces go in a few hundred thousand
// rows at a time, not a million: holding a million rows cost 512 small
// ranks a third of their peak. A plain store still gathers a million.
func TestSmallTracesFlushSoonerWhenStaged(t *testing.T) {
	ctx := context.Background()
	for _, staged := range []bool{true, false} {
		st, err := duck.Open(ctx, "", duck.Options{Staged: staged})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		s := newBufferedSink(st, flushRows(st))
		rec := stepRows(1000).Record("small", 0) // well below largeBatch
		defer rec.Release()
		const batches = 500
		for range batches {
			if err := s.Insert(ctx, "steps", rec); err != nil {
				t.Fatal(err)
			}
		}
		var before int
		if err := st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM steps").Scan(&before); err != nil {
			t.Fatal(err)
		}
		if staged && before == 0 {
			t.Errorf("staged store: %d small rows still wait, none inserted", batches*1000)
		}
		if !staged && before != 0 {
			t.Errorf("plain store: %d of %d rows inserted before a million waited", before, batches*1000)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var after int
		if err := st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM steps").Scan(&after); err != nil {
			t.Fatal(err)
		}
		if after != batches*1000 {
			t.Errorf("staged %v: %d rows after Flush, want %d", staged, after, batches*1000)
		}
	}
}

// stepRows is a steps table of n one-nanosecond steps.
func stepRows(n int) *stream.StepTable {
	var s stream.StepTable
	for i := range n {
		s.Step.Append(int32(i))
		s.Start.Append(int64(i))
		s.End.Append(int64(i + 1))
	}
	return &s
}
