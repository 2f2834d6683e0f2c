package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/trainscope/trainscope/stream"
)

// wireSamples are real messages of the tables whose layouts differ: plain
// strings and numbers (ranks), dictionaries and sparse columns (slices),
// lists of integers (process_groups).
func wireSamples(t testing.TB) map[string][]byte {
	t.Helper()
	recs := map[string]arrow.RecordBatch{
		"ranks": stream.RanksRecord([]stream.RankRow{{RunID: "run-1", Host: "node-1", Source: "/data/rank0.pt.trace.json.gz", RankSource: "distributedInfo",
			Rank: 3, WorldSize: 8, Backend: "nccl", GPUName: "NVIDIA H100 80GB HBM3", GPUMemBytes: 85 << 30, NumSMs: 132,
			BaseTimeNS: 1_700_000_000_000_000_000, StartNS: 1_700_000_000_100_000_000, EndNS: 1_700_000_001_000_000_000, Complete: true, Events: 123456, JSONBytes: 9 << 20}}),
		"slices_detail": bigSliceTable(12).Record("run-1", "node-1", 3),
		"process_groups": stream.ProcessGroupsRecord("run-1", 3, []stream.ProcessGroupRow{
			{Name: "0", Desc: "default_pg", Size: 8, Ranks: []int32{0, 1, 2, 3, 4, 5, 6, 7}},
			{Name: "1", Desc: "tp", Size: 2, Ranks: []int32{2, 3}}}),
	}
	out := map[string][]byte{}
	for table, rec := range recs {
		b, err := Encode(table, rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		out[table] = b
	}
	return out
}

// Every single-bit flip of a real message either decodes into a batch that
// passes CheckBatch or is refused as poison, and no decode allocates more
// than a small multiple of the message. Before messages were verified, a
// flipped bit in a vector length made the Arrow reader allocate 64-158 GB
// ("fatal error: out of memory"), and the unacknowledged message killed
// the server again on every restart.
func TestBitFlippedMessagesAreRefusedOrSane(t *testing.T) {
	for table, good := range wireSamples(t) {
		t.Run(table, func(t *testing.T) {
			var refused, decoded int
			var ms runtime.MemStats
			worst := uint64(0)
			// every bit of the small messages, every 3rd of the 14 KB one
			step := 1 + len(good)/5000
			if testing.Short() {
				step = 13
			}
			for bit := 0; bit < len(good)*8; bit += step {
				b := bytes.Clone(good)
				b[bit/8] ^= 1 << (bit % 8)
				// reading the allocator's figures stops the world: every
				// 8th flip is measured (a runaway one crashes anyway)
				measure := bit%8 == 0
				var before uint64
				if measure {
					runtime.ReadMemStats(&ms)
					before = ms.TotalAlloc
				}
				tbl, rec, err := Decode(b)
				if measure {
					runtime.ReadMemStats(&ms)
					worst = max(worst, ms.TotalAlloc-before)
				}
				if err != nil {
					if !errors.Is(err, ErrPoison) {
						t.Fatalf("bit %d: error %v does not wrap ErrPoison", bit, err)
					}
					refused++
					continue
				}
				decoded++
				if err := CheckBatch(tbl, rec); err != nil {
					t.Fatalf("bit %d: Decode returned a batch CheckBatch refuses: %v", bit, err)
				}
				rec.Release()
			}
			if limit := uint64(64*len(good) + 1<<20); worst > limit {
				t.Errorf("a flipped message of %d bytes made Decode allocate %d bytes (limit %d)", len(good), worst, limit)
			}
			if refused == 0 || decoded == 0 {
				t.Errorf("%d refused, %d decoded: expected both (flips in values decode, flips in structure do not)", refused, decoded)
			}
			t.Logf("%d-byte message: %d flips refused, %d decoded (values changed), at most %d bytes allocated", len(good), refused, decoded, worst)
		})
	}
}

// Hand-made corruptions of each part CheckMessage verifies.
func TestCheckMessageRefuses(t *testing.T) {
	good := wireSamples(t)["ranks"]
	if err := CheckMessage(good); err != nil {
		t.Fatalf("a good message: %v", err)
	}
	metaLen := int(binary.LittleEndian.Uint32(good[4:]))
	root := 8 + int(binary.LittleEndian.Uint32(good[8:]))
	cases := []struct {
		name string
		edit func(b []byte) []byte
		want string
	}{
		{"too large", func(b []byte) []byte { return append(b, make([]byte, MaxMessageBytes)...) }, "more than the"},
		{"no continuation", func(b []byte) []byte { b[0] = 0; return b }, "no continuation marker"},
		{"metadata longer than the message", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[4:], uint32(len(b)))
			return b
		}, "metadata of"},
		{"root outside the metadata", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[8:], uint32(metaLen+100))
			return b
		}, "runs past"},
		{"vtable outside the metadata", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[root:], 0x7fff0000)
			return b
		}, "vtable"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-9] }, ""},
		{"trailing bytes", func(b []byte) []byte { return append(b, 1, 2, 3) }, "after"},
		{"empty", func([]byte) []byte { return nil }, "too few"},
	}
	for _, c := range cases {
		err := CheckMessage(c.edit(bytes.Clone(good)))
		if err == nil || !errors.Is(err, ErrPoison) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrPoison mentioning %q", c.name, err, c.want)
		}
	}
}

// CheckBatch refuses what decodes but the readers never produce.
func TestCheckBatchRefuses(t *testing.T) {
	bad := func(rows []stream.RankRow) error {
		rec := stream.RanksRecord(rows)
		defer rec.Release()
		return CheckBatch("ranks", rec)
	}
	ok := stream.RankRow{RunID: "r", Host: "h", Source: "s", Rank: 1, BaseTimeNS: 1, StartNS: 2, EndNS: 3}
	if err := bad([]stream.RankRow{ok}); err != nil {
		t.Fatalf("a good batch: %v", err)
	}
	for name, mod := range map[string]func(r *stream.RankRow){
		"negative rank":   func(r *stream.RankRow) { r.Rank = -4 },
		"time overflow":   func(r *stream.RankRow) { r.EndNS = stream.MaxTimeNS + 1 },
		"invalid UTF-8":   func(r *stream.RankRow) { r.Host = "node\xff1" },
		"empty run":       func(r *stream.RankRow) { r.RunID = "" },
		"world too large": func(r *stream.RankRow) { r.WorldSize = stream.MaxRank + 1 },
		"run id too long": func(r *stream.RankRow) { r.RunID = strings.Repeat("r", stream.MaxRunIDBytes+1) },
	} {
		r := ok
		mod(&r)
		if err := bad([]stream.RankRow{r}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	two := ok
	two.RunID = "other"
	if err := bad([]stream.RankRow{ok, two}); err == nil || !strings.Contains(err.Error(), "one run") {
		t.Errorf("two runs in a batch: %v", err)
	}
	rec := bigSliceTable(3).Record("r", "h", 0)
	defer rec.Release()
	if err := CheckBatch("ranks", rec); err == nil {
		t.Errorf("a slices batch passed as ranks")
	}
}

// FuzzDecode: no message, however made, crashes Decode or makes it
// allocate without bound; what it returns passes CheckBatch.
func FuzzDecode(f *testing.F) {
	for _, b := range wireSamples(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tbl, rec, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrPoison) {
				t.Fatalf("error %v does not wrap ErrPoison", err)
			}
			return
		}
		defer rec.Release()
		if err := CheckBatch(tbl, rec); err != nil {
			t.Fatalf("Decode returned a batch CheckBatch refuses: %v", err)
		}
	})
}
