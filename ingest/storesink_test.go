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

// With a compressed store, a large batch goes in at once and is
// compressed; small ones wait for the row limit as before.
func TestCompressedStoreFlushesEachTrace(t *testing.T) {
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{Compress: true})
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
	s := newBufferedSink(st, 1<<20)
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
	if n := count("SELECT count(*) FROM pragma_storage_info('steps') WHERE compression = 'Uncompressed'"); n != 0 {
		t.Errorf("%d uncompressed segments after the flush", n)
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
