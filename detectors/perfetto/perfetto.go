package perfetto

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/sql/duck"
)

// Options choose what Write exports.
type Options struct {
	// Run is the run to export ("" exports the report's only run, and is
	// an error when it holds several).
	Run string
	// Ranks limits the export to these ranks (nil: every rank).
	Ranks []int
}

// Stats says what an export holds.
type Stats struct {
	Events, Ranks, LateArrivals, Flows int
}

// gpuTID numbers a GPU stream's track inside its rank's process apart
// from the host threads' (numbered from 1).
const gpuTID = 1_000_000

// Write writes the analysed window of a run as a Chrome trace
// (JSON) that ui.perfetto.dev and chrome://tracing open: one process per
// rank, a track per GPU stream and host thread, every slice of the window
// on clocks aligned across ranks (collective_instances' offsets), and the
// report's findings marked on it: an instant event where a late member
// reached a collective and held the others up, a flow from it to every
// peer that waited, and one marker per root cause with its headline and
// fix. Slices keep the arguments trainscope's Kineto reader reads back
// (device, stream, correlation, collective), so the export is a trace
// trainscope can analyse again.
func Write(ctx context.Context, st *duck.Store, rep *report.Report, w io.Writer, opts Options) (Stats, error) {
	var stats Stats
	run, err := exportRun(rep, opts.Run)
	if err != nil {
		return stats, err
	}
	rankFilter := ""
	if len(opts.Ranks) > 0 {
		ids := make([]string, len(opts.Ranks))
		for i, r := range opts.Ranks {
			ids[i] = strconv.Itoa(r)
		}
		rankFilter = " AND s.rank IN (" + strings.Join(ids, ",") + ")"
	}
	args := []any{sql.Named("run", run)}
	offsets, err := clockOffsets(ctx, st, run)
	if err != nil {
		return stats, err
	}
	var base sql.NullInt64
	if err := st.Conn().QueryRowContext(ctx, `SELECT min(s.ts) FROM slices s
		JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
		WHERE s.run_id = $run`+rankFilter+windowFilter, args...).Scan(&base); err != nil {
		return stats, fmt.Errorf("perfetto export: %w", err)
	}
	if !base.Valid {
		return stats, fmt.Errorf("perfetto export: run %s has no events in the analysed window", run)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	e := &chromeWriter{w: bw, base: base.Int64}
	bw.WriteString(`{"displayTimeUnit":"ns","traceEvents":[`)

	rows, err := st.Query(ctx, `SELECT s.rank, s.host, s.kind, s.cat, s.name, s.ts, s.dur, s.tid, s.device, s.stream,
		s.correlation, s.external_id, s.coll_name, s.coll_in_elems, s.coll_dtype, s.pg_ranks, s.bytes
		FROM slices s JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
		WHERE s.run_id = $run`+rankFilter+windowFilter+`
		ORDER BY s.rank, s.ts`, args...)
	if err != nil {
		return stats, fmt.Errorf("perfetto export: %w", err)
	}
	// tracks: host threads numbered from 1 in order of appearance (OS
	// thread ids can exceed the 32 bits trace viewers keep), GPU streams
	// at gpuTID + stream
	tracks := map[[2]int64]int64{}
	threads := map[int64]int64{}
	lastRank := int64(-1)
	for rows.Next() {
		var rank int64
		var host, kind, cat, name string
		var ts, dur, tid int64
		var device, stream, corr, ext, elems, nbytes sql.NullInt64
		var coll, dtype, pgRanks sql.NullString
		if err := rows.Scan(&rank, &host, &kind, &cat, &name, &ts, &dur, &tid, &device, &stream, &corr, &ext,
			&coll, &elems, &dtype, &pgRanks, &nbytes); err != nil {
			rows.Close()
			return stats, err
		}
		if rank != lastRank {
			lastRank = rank
			stats.Ranks++
			hostName := host
			if hostName == "" {
				hostName = "unknown host"
			}
			e.meta("process_name", rank, 0, fmt.Sprintf("rank %d (%s)", rank, hostName))
			e.meta("process_sort_index", rank, 0, rank)
		}
		gpu := stream.Valid && (kind == "kernel" || kind == "comm" || kind == "memcpy" || kind == "memset" || kind == "gpu_annotation")
		key := [2]int64{rank, tid}
		if gpu {
			key = [2]int64{rank, -1 - stream.Int64}
		}
		track, ok := tracks[key]
		if !ok {
			if gpu {
				track = gpuTID + stream.Int64
				e.meta("thread_name", rank, track, fmt.Sprintf("GPU stream %d", stream.Int64))
			} else {
				threads[rank]++
				track = threads[rank]
				e.meta("thread_name", rank, track, fmt.Sprintf("host thread %d", tid))
			}
			tracks[key] = track
		}
		a := map[string]any{}
		setInt := func(k string, v sql.NullInt64) {
			if v.Valid {
				a[k] = v.Int64
			}
		}
		setInt("device", device)
		setInt("stream", stream)
		setInt("correlation", corr)
		setInt("External id", ext)
		setInt("In msg nelems", elems)
		setInt("bytes", nbytes)
		if coll.Valid {
			a["Collective name"] = coll.String
		}
		if dtype.Valid {
			a["dtype"] = dtype.String
		}
		if pgRanks.Valid {
			a["Process Group Ranks"] = pgRanks.String
		}
		e.slice(rank, track, cat, name, ts-offsets[rank], dur, a)
		stats.Events++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return stats, err
	}
	// mark the late arrivals that matter: at least 1% of the median step
	minBlock := max(10e3, 0.01*rep.MedianStepNS(run))
	late, flows, err := e.lateArrivals(ctx, st, run, opts.Ranks, offsets, int64(minBlock))
	if err != nil {
		return stats, err
	}
	stats.LateArrivals, stats.Flows = late, flows
	e.causes(rep, run, offsets)
	bw.WriteString("\n],\"trainscope\":")
	meta, _ := json.Marshal(map[string]any{"run_id": run, "base_ns": base.Int64,
		"clocks": "aligned on collective ends; a rank's events are shifted by its offset", "root_causes": causesOf(rep, run)})
	bw.Write(meta)
	bw.WriteString("}\n")
	if e.err != nil {
		return stats, e.err
	}
	return stats, bw.Flush()
}

// windowFilter keeps the slices of the analysis window (as the views do).
const windowFilter = `
		AND (w.step_lo IS NULL OR s.step >= w.step_lo) AND (w.step_hi IS NULL OR s.step <= w.step_hi)
		AND (s.step IS NOT NULL OR (w.step_lo IS NULL AND w.step_hi IS NULL))`

func exportRun(rep *report.Report, run string) (string, error) {
	if run != "" {
		for _, ri := range rep.Runs {
			if ri.RunID == run {
				return run, nil
			}
		}
		return "", fmt.Errorf("perfetto export: no run %q", run)
	}
	switch len(rep.Runs) {
	case 0:
		return "", fmt.Errorf("perfetto export: no run to export")
	case 1:
		return rep.Runs[0].RunID, nil
	}
	ids := make([]string, len(rep.Runs))
	for i, ri := range rep.Runs {
		ids[i] = ri.RunID
	}
	return "", fmt.Errorf("perfetto export: %d runs (%s): name one with --run", len(ids), strings.Join(ids, ", "))
}

func clockOffsets(ctx context.Context, st *duck.Store, run string) (map[int64]int64, error) {
	rows, err := st.Query(ctx, `SELECT rank, any_value(clock_offset_ns) FROM collective_instances WHERE run_id = ? GROUP BY rank`, run)
	if err != nil {
		return nil, fmt.Errorf("perfetto export: clock offsets: %w", err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var r, o int64
		if err := rows.Scan(&r, &o); err != nil {
			return nil, err
		}
		out[r] = o
	}
	return out, rows.Err()
}

func causesOf(rep *report.Report, run string) []report.Cause {
	var out []report.Cause
	for _, c := range rep.Causes {
		if c.RunID == run {
			out = append(out, c)
		}
	}
	return out
}

// chromeWriter writes Chrome trace events, microseconds from base.
type chromeWriter struct {
	w     *bufio.Writer
	base  int64
	n     int
	err   error
	flows int
}

func (e *chromeWriter) us(ns int64) string {
	return strconv.FormatFloat(float64(ns-e.base)/1e3, 'f', 3, 64)
}

func (e *chromeWriter) event(fields string, args map[string]any) {
	if e.n > 0 {
		e.w.WriteString(",")
	}
	e.n++
	e.w.WriteString("\n{")
	e.w.WriteString(fields)
	if len(args) > 0 {
		b, err := json.Marshal(args)
		if err != nil && e.err == nil {
			e.err = err
		}
		e.w.WriteString(`,"args":`)
		e.w.Write(b)
	}
	e.w.WriteString("}")
}

func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (e *chromeWriter) meta(name string, pid, tid int64, v any) {
	key := "name"
	if strings.HasSuffix(name, "sort_index") {
		key = "sort_index"
	}
	e.event(fmt.Sprintf(`"ph":"M","name":%s,"pid":%d,"tid":%d`, jsonStr(name), pid, tid), map[string]any{key: v})
}

func (e *chromeWriter) slice(pid, tid int64, cat, name string, ts, dur int64, args map[string]any) {
	e.event(fmt.Sprintf(`"ph":"X","cat":%s,"name":%s,"pid":%d,"tid":%d,"ts":%s,"dur":%s`,
		jsonStr(cat), jsonStr(name), pid, tid, e.us(ts), strconv.FormatFloat(float64(dur)/1e3, 'f', 3, 64)), args)
}

func (e *chromeWriter) instant(pid, tid int64, scope, name string, ts int64, args map[string]any) {
	e.event(fmt.Sprintf(`"ph":"i","s":%q,"cat":"trainscope","name":%s,"pid":%d,"tid":%d,"ts":%s`,
		scope, jsonStr(name), pid, tid, e.us(ts)), args)
}

// lateArrivals marks every collective member that arrived last and held
// the others up: an instant on its stream at its arrival, and a flow from
// there to each peer's collective, ending where that peer stopped waiting.
func (e *chromeWriter) lateArrivals(ctx context.Context, st *duck.Store, run string, ranks []int, off map[int64]int64, minBlock int64) (int, int, error) {
	keep := func(r int64) bool {
		if len(ranks) == 0 {
			return true
		}
		for _, k := range ranks {
			if int64(k) == r {
				return true
			}
		}
		return false
	}
	rows, err := st.Query(ctx, `
		WITH late AS (SELECT run_id, comm, step, seq, rank, stream, ts, block_ns, coalesce(coll_name, name) AS coll
		              FROM collective_instances WHERE run_id = ? AND is_last AND block_ns >= ?)
		SELECT l.rank, l.stream, l.ts, l.block_ns, l.coll, l.step, c.rank, c.stream, c.ts, c.wait_ns
		FROM late l JOIN collective_instances c
		  ON c.run_id = l.run_id AND c.comm = l.comm AND c.step IS NOT DISTINCT FROM l.step AND c.seq = l.seq AND c.rank <> l.rank
		WHERE c.wait_ns > 0
		ORDER BY l.rank, l.ts, c.rank`, run, minBlock)
	if err != nil {
		return 0, 0, fmt.Errorf("perfetto export: late arrivals: %w", err)
	}
	defer rows.Close()
	type key struct{ rank, ts int64 }
	marked := map[key]bool{}
	late := 0
	for rows.Next() {
		var lr, lstream, lts, block, pr, pstream, pts, wait int64
		var coll string
		var step sql.NullInt64
		if err := rows.Scan(&lr, &lstream, &lts, &block, &coll, &step, &pr, &pstream, &pts, &wait); err != nil {
			return 0, 0, err
		}
		if !keep(lr) {
			continue
		}
		at := lts - off[lr]
		if k := (key{lr, lts}); !marked[k] {
			marked[k] = true
			late++
			a := map[string]any{"collective": coll, "held_up_ns": block}
			if step.Valid {
				a["step"] = step.Int64
			}
			e.instant(lr, gpuTID+lstream, "t", fmt.Sprintf("late arrival: held up %s by %s", coll, mdfmt.Duration(float64(block))), at, a)
		}
		if !keep(pr) {
			continue
		}
		e.flows++
		id := e.flows
		e.event(fmt.Sprintf(`"ph":"s","id":%d,"cat":"trainscope_wait","name":"peer waited","pid":%d,"tid":%d,"ts":%s`,
			id, lr, gpuTID+lstream, e.us(at)), nil)
		// the peer stopped waiting when the late member arrived: the flow
		// ends inside the peer's collective, at the end of its wait
		end := pts - off[pr] + wait - 1
		e.event(fmt.Sprintf(`"ph":"f","bp":"e","id":%d,"cat":"trainscope_wait","name":"peer waited","pid":%d,"tid":%d,"ts":%s`,
			id, pr, gpuTID+pstream, e.us(end)), map[string]any{"waited_ns": wait})
	}
	return late, e.flows, rows.Err()
}

// causes marks each root cause on its rank: at the first collective it
// held up, with the headline and the fix.
func (e *chromeWriter) causes(rep *report.Report, run string, off map[int64]int64) {
	for _, c := range causesOf(rep, run) {
		if c.Rank == nil || c.AtNS == 0 {
			continue
		}
		r := int64(*c.Rank)
		e.instant(r, 0, "p", fmt.Sprintf("root cause %s: %s", c.ID, c.Title()), c.AtNS-off[r],
			map[string]any{"headline": c.Headline, "fix": c.Fix, "evidence": c.Evidence})
	}
}
