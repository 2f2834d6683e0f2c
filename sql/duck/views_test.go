package duck_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/sql/duck"
)

// sl is one hand-written row of the slices table (the columns the views
// read; the rest stay NULL).
type sl struct {
	run     string
	rank    int
	step    any // int or nil
	kind    string
	name    string
	ts, dur int64
	stream  int64
	pgRanks any // string or nil
	coll    any // coll_name: string or nil
}

func insertRows(t *testing.T, st *duck.Store, rows []sl) {
	t.Helper()
	for _, r := range rows {
		mustExec(t, st, `INSERT INTO slices_detail (run_id, rank, host, step, kind, cat, name, ts, dur, pid, tid, stream, pg_ranks, coll_name)
VALUES (?, ?, ?, ?, ?, 'cat', ?, ?, ?, 1, 2, ?, ?, ?)`,
			r.run, r.rank, fmt.Sprintf("host%d", r.rank), r.step, r.kind, r.name, r.ts, r.dur, r.stream, r.pgRanks, r.coll)
	}
}

func setWindow(t *testing.T, st *duck.Store, run string, rank int, lo, hi any) {
	t.Helper()
	mustExec(t, st, "INSERT INTO analysis_window VALUES (?, ?, ?, ?, ?)", run, rank, lo, hi, rank+1)
}

func windowFixture(t *testing.T) *duck.Store {
	st := openMem(t)
	insertRows(t, st, []sl{
		// rank 0: window steps 1..2
		{run: "r", rank: 0, step: 0, kind: "kernel", name: "k_step0", ts: 100, dur: 10},
		{run: "r", rank: 0, step: 1, kind: "kernel", name: "k_step1", ts: 200, dur: 20},
		{run: "r", rank: 0, step: 1, kind: "comm", name: "nccl_allreduce", ts: 210, dur: 40},
		{run: "r", rank: 0, step: 2, kind: "memcpy", name: "memcpy_htod", ts: 300, dur: 5},
		{run: "r", rank: 0, step: 2, kind: "memset", name: "memset", ts: 310, dur: 2},
		{run: "r", rank: 0, step: 3, kind: "kernel", name: "k_step3", ts: 400, dur: 10},
		{run: "r", rank: 0, step: nil, kind: "kernel", name: "k_nostep", ts: 500, dur: 10},
		{run: "r", rank: 0, step: 1, kind: "runtime", name: "cudaLaunchKernel", ts: 190, dur: 5},
		{run: "r", rank: 0, step: 1, kind: "cpu_op", name: "aten::mm", ts: 180, dur: 20},
		{run: "r", rank: 0, step: 1, kind: "gpu_annotation", name: "forward", ts: 200, dur: 50},
		{run: "r", rank: 0, step: 1, kind: "sync", name: "cudaStreamSynchronize", ts: 260, dur: 3},
		{run: "r", rank: 0, step: 4, kind: "runtime", name: "cudaMemcpyAsync", ts: 420, dur: 5},
		// rank 1: whole trace (NULL bounds)
		{run: "r", rank: 1, step: 0, kind: "kernel", name: "k_step0", ts: 1000, dur: 100},
		{run: "r", rank: 1, step: 7, kind: "comm", name: "nccl_allgather", ts: 1200, dur: 50},
		{run: "r", rank: 1, step: nil, kind: "kernel", name: "k_nostep", ts: 50, dur: 10},
		{run: "r", rank: 1, step: nil, kind: "python", name: "train.py", ts: 0, dur: 2000},
		{run: "r", rank: 1, step: 0, kind: "sync", name: "cudaDeviceSynchronize", ts: 1150, dur: 10},
		// rank 2: no analysis_window row, so outside every view
		{run: "r", rank: 2, step: 1, kind: "kernel", name: "k_step1", ts: 200, dur: 20},
		// another run with the same rank: its own window
		{run: "other", rank: 0, step: 1, kind: "kernel", name: "k_other", ts: 9000, dur: 1},
	})
	setWindow(t, st, "r", 0, 1, 2)
	setWindow(t, st, "r", 1, nil, nil)
	setWindow(t, st, "other", 0, 5, 6)
	return st
}

func TestGPUWindow(t *testing.T) {
	st := windowFixture(t)
	checkRows(t, st, []string{
		"r|0|host0|1|kernel|k_step1|200|220|COMP",
		"r|0|host0|1|comm|nccl_allreduce|210|250|COMM",
		"r|0|host0|2|memcpy|memcpy_htod|300|305|MEM",
		"r|0|host0|2|memset|memset|310|312|MEM",
		"r|1|host1|NULL|kernel|k_nostep|50|60|COMP",
		"r|1|host1|0|kernel|k_step0|1000|1100|COMP",
		"r|1|host1|7|comm|nccl_allgather|1200|1250|COMM",
	}, "SELECT run_id, rank, host, step, kind, name, ts, end_ts, class FROM gpu_window ORDER BY run_id, rank, ts")
	// end_ts is ts + dur on every row.
	if n := queryInt(t, st, "SELECT count(*) FROM gpu_window WHERE end_ts <> ts + dur"); n != 0 {
		t.Errorf("%d rows with end_ts <> ts + dur", n)
	}
}

func TestHostWindow(t *testing.T) {
	st := windowFixture(t)
	checkRows(t, st, []string{
		"r|0|1|cpu_op|aten::mm",
		"r|0|1|runtime|cudaLaunchKernel",
		"r|1|NULL|python|train.py",
	}, "SELECT run_id, rank, step, kind, name FROM host_window ORDER BY run_id, rank, ts")
}

func TestGPUSpan(t *testing.T) {
	st := windowFixture(t)
	checkRows(t, st, []string{
		"r|0|200|312|112",
		"r|1|50|1250|1200",
	}, "SELECT run_id, rank, start_ns, end_ns, span_ns FROM gpu_span ORDER BY run_id, rank")

	// Widening rank 0's window to every step (NULL bounds) takes in steps
	// 0 and 3 and the kernel without a step.
	mustExec(t, st, "UPDATE analysis_window SET step_lo = NULL, step_hi = NULL WHERE run_id = 'r' AND rank = 0")
	checkRows(t, st, []string{"r|0|100|510|410|7"},
		"SELECT s.run_id, s.rank, start_ns, end_ns, span_ns, (SELECT count(*) FROM gpu_window w WHERE w.run_id = s.run_id AND w.rank = s.rank) FROM gpu_span s WHERE rank = 0 AND run_id = 'r'")
}

// collectiveFixture: three ranks run the same three collectives on one
// communicator. In true time ranks 0 and 2 arrive at S, rank 1 arrives
// 300 us later, and every rank finishes at S + 2 ms. Rank 2's clock reads
// 1 ms ahead, so all its timestamps are shifted by +1 ms. Every timestamp
// is offset by base.
const (
	msNs      = int64(1_000_000)
	lateNs    = int64(300_000)
	skewNs    = msNs
	collDurNs = 2 * msNs
)

var collStarts = []struct {
	step  int
	start int64
	coll  string
}{
	{0, 10 * msNs, "allreduce"},
	{0, 20 * msNs, "allgather"},
	{1, 30 * msNs, "allreduce"},
}

func collectiveFixture(t *testing.T, base int64) *duck.Store {
	st := openMem(t)
	var rows []sl
	for rank := range 3 {
		shift := int64(0)
		if rank == 2 {
			shift = skewNs
		}
		for _, c := range collStarts {
			arrive := c.start
			if rank == 1 {
				arrive += lateNs
			}
			end := c.start + collDurNs
			rows = append(rows, sl{run: "r", rank: rank, step: c.step, kind: "comm",
				name: "ncclDevKernel_" + c.coll, ts: base + arrive + shift, dur: end - arrive,
				stream: 13, pgRanks: "[0, 1, 2]", coll: c.coll})
			// A compute kernel before each collective: not a collective.
			rows = append(rows, sl{run: "r", rank: rank, step: c.step, kind: "kernel",
				name: "gemm", ts: base + c.start - msNs + shift, dur: msNs / 2, stream: 7})
		}
	}
	rows = append(rows,
		// A communicator with a single member matches no other rank.
		sl{run: "r", rank: 0, step: 0, kind: "comm", name: "ncclDevKernel_SendRecv", ts: base + 15*msNs, dur: 1000,
			stream: 21, pgRanks: "[0]", coll: "send"},
		// Ranks 0 and 1 disagree on what the collective was: not an instance.
		sl{run: "r", rank: 0, step: 1, kind: "comm", name: "ncclDevKernel_Broadcast", ts: base + 40*msNs, dur: 1000,
			stream: 22, pgRanks: "[0, 1]", coll: "broadcast"},
		sl{run: "r", rank: 1, step: 1, kind: "comm", name: "ncclDevKernel_AllReduce", ts: base + 40*msNs, dur: 1000,
			stream: 22, pgRanks: "[0, 1]", coll: "allreduce"},
	)
	insertRows(t, st, rows)
	for rank := range 3 {
		setWindow(t, st, "r", rank, nil, nil)
	}
	return st
}

func TestCollectiveInstances(t *testing.T) {
	st := collectiveFixture(t, 0)

	// The clock offsets: rank 2 reads +1 ms, the others 0 (within 1 us).
	rows := rowStrings(t, st, "SELECT rank, min(clock_offset_ns), max(clock_offset_ns) FROM collective_instances GROUP BY rank ORDER BY rank")
	if len(rows) != 3 {
		t.Fatalf("offsets for %d ranks: %q", len(rows), rows)
	}
	for rank, r := range rows {
		var gotRank int
		var lo, hi int64
		if _, err := fmt.Sscanf(strings.ReplaceAll(r, "|", " "), "%d %d %d", &gotRank, &lo, &hi); err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		want := int64(0)
		if rank == 2 {
			want = skewNs
		}
		if gotRank != rank || lo != hi || abs64(lo-want) > 1000 {
			t.Errorf("rank %d: clock offset %d..%d, want %d", gotRank, lo, hi, want)
		}
	}
	// Rank 2's offset relative to rank 0 is the +1 ms skew.
	if d := queryInt(t, st, `SELECT max(clock_offset_ns) FILTER (WHERE rank = 2) - max(clock_offset_ns) FILTER (WHERE rank = 0)
FROM collective_instances`); abs64(d-skewNs) > 1000 {
		t.Errorf("offset of rank 2 relative to rank 0 = %d, want %d", d, skewNs)
	}

	// Every row: arrival in true time, and the aligned ends agree.
	var want []string
	for _, c := range collStarts {
		seq := 1
		if c.start == 20*msNs {
			seq = 2
		}
		for rank := range 3 {
			arrival := c.start
			if rank == 1 {
				arrival += lateNs
			}
			ts, off := arrival, int64(0)
			if rank == 2 {
				ts, off = arrival+skewNs, skewNs
			}
			want = append(want, fmt.Sprintf("[0, 1, 2]|%d|%d|%d|host%d|%s|3|%d|%d|%d|%d",
				c.step, seq, rank, rank, c.coll, ts, off, arrival, c.start+collDurNs))
		}
	}
	checkRows(t, st, want, `SELECT comm, step, seq, rank, host, coll_name, members, ts, clock_offset_ns, arrival_ns, aligned_end_ns
FROM collective_instances ORDER BY step, seq, rank`)
}

func TestCollectiveWaits(t *testing.T) {
	st := collectiveFixture(t, 0)
	// Per instance: rank 1 is last by 300 us; ranks 0 and 2 each waited
	// 300 us for it, so it cost 600 us in all.
	checkRows(t, st, []string{
		"r|[0, 1, 2]|0|1|allreduce|3|300000|1|600000",
		"r|[0, 1, 2]|0|2|allgather|3|300000|1|600000",
		"r|[0, 1, 2]|1|1|allreduce|3|300000|1|600000",
	}, `SELECT run_id, comm, step, seq, collective, members, spread_ns, last_rank, wait_caused_ns::BIGINT
FROM collective_waits ORDER BY step, seq`)
}

// With real epoch timestamps (about 1.7e18 ns) the answers hold to within
// 1 us: the view's median() works in DOUBLE, whose spacing at 1.7e18 is
// 256 ns, so exact agreement is not guaranteed there.
func TestCollectiveEpochTimestamps(t *testing.T) {
	const base = int64(1_712_345_678_901_234_567)
	st := collectiveFixture(t, base)
	rows := rowStrings(t, st, "SELECT rank, min(clock_offset_ns), max(clock_offset_ns) FROM collective_instances GROUP BY rank ORDER BY rank")
	if len(rows) != 3 {
		t.Fatalf("offsets for %d ranks: %q", len(rows), rows)
	}
	for rank, r := range rows {
		var gotRank int
		var lo, hi int64
		if _, err := fmt.Sscanf(strings.ReplaceAll(r, "|", " "), "%d %d %d", &gotRank, &lo, &hi); err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		want := int64(0)
		if rank == 2 {
			want = skewNs
		}
		if gotRank != rank || abs64(lo-want) > 1000 || abs64(hi-want) > 1000 {
			t.Errorf("rank %d: clock offset %d..%d, want %d within 1 us", gotRank, lo, hi, want)
		}
		if lo != want || hi != want {
			t.Logf("rank %d: clock offset %d..%d is %d..%d ns off (DOUBLE median)", rank, lo, hi, lo-want, hi-want)
		}
	}
	rows = rowStrings(t, st, "SELECT step, seq, last_rank, members, spread_ns, wait_caused_ns::BIGINT FROM collective_waits ORDER BY step, seq")
	if len(rows) != len(collStarts) {
		t.Fatalf("instances = %q", rows)
	}
	for i, r := range rows {
		var step, seq, last, members int
		var spread, wait int64
		if _, err := fmt.Sscanf(strings.ReplaceAll(r, "|", " "), "%d %d %d %d %d %d", &step, &seq, &last, &members, &spread, &wait); err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		if step != collStarts[i].step || last != 1 || members != 3 ||
			abs64(spread-lateNs) > 1000 || abs64(wait-2*lateNs) > 2000 {
			t.Errorf("instance %d = %q, want last rank 1 of 3, spread %d, wait %d (within 1 us per rank)", i, r, lateNs, 2*lateNs)
		}
	}
}

func TestCollectiveWaitsUnskewedPair(t *testing.T) {
	// Two ranks with agreeing clocks, one arriving late by a different
	// amount at each collective; the comm key falls back to pg_name and
	// then to the stream.
	st := openMem(t)
	mustExec(t, st, `INSERT INTO slices_detail (run_id, rank, host, step, kind, cat, name, ts, dur, pid, tid, stream, pg_name) VALUES
('r', 0, 'h0', 0, 'comm', 'kernel', 'nccl_ar', 1000, 500, 1, 1, 9, 'pg0'),
('r', 1, 'h1', 0, 'comm', 'kernel', 'nccl_ar', 1200, 300, 1, 1, 9, 'pg0'),
('r', 0, 'h0', 0, 'comm', 'kernel', 'nccl_ar', 3000, 100, 1, 1, 9, 'pg0'),
('r', 1, 'h1', 0, 'comm', 'kernel', 'nccl_ar', 2950, 150, 1, 1, 9, 'pg0'),
('r', 0, 'h0', 0, 'comm', 'kernel', 'nccl_p2p', 5000, 10, 1, 1, 4, NULL),
('r', 1, 'h1', 0, 'comm', 'kernel', 'nccl_p2p', 5004, 6, 1, 1, 4, NULL)`)
	setWindow(t, st, "r", 0, nil, nil)
	setWindow(t, st, "r", 1, nil, nil)
	checkRows(t, st, []string{
		"pg0|1|nccl_ar|2|200|1|200",
		"pg0|2|nccl_ar|2|50|0|50",
		"stream 4|1|nccl_p2p|2|4|1|4",
	}, `SELECT comm, seq, collective, members, spread_ns, last_rank, wait_caused_ns::BIGINT
FROM collective_waits ORDER BY comm, seq`)
	checkRows(t, st, []string{"0|0", "1|0"},
		"SELECT DISTINCT rank, clock_offset_ns FROM collective_instances ORDER BY rank")
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
