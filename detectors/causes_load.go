package detectors

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/trainscope/trainscope/detectors/causes"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/sql/duck"
)

// loadCauseInput reads what causes.Judge judges r's runs from: each run's
// analysed steps, the late arrivals at collectives and who waited for
// them, the step-time account and the call stacks its causes may name;
// with r's runs (their median steps set here), findings, metric tables and
// detector roles, and the cause graph's thresholds.
func loadCauseInput(ctx context.Context, st *duck.Store, r *report.Report, cfg CausesConfig) (causes.Input, error) {
	in := causes.Input{Config: causes.Thresholds(cfg), Findings: r.Findings, Metrics: r.Metrics, Roles: r.Roles}
	var err error
	if in.Late, err = loadLate(ctx, st); err != nil {
		return in, err
	}
	if in.Steps, err = windowSteps(ctx, st); err != nil {
		return in, err
	}
	if in.Waiters, err = loadWaiters(ctx, st); err != nil {
		return in, err
	}
	if in.Account, err = loadAccount(ctx, st); err != nil {
		return in, err
	}
	if in.Recorded, err = loadRecorded(ctx, st); err != nil {
		return in, err
	}
	in.Stacks = map[causes.StackKey]string{}
	wanted := causes.StacksWanted(in.Account)
	for _, run := range r.Runs {
		if err := stackPaths(ctx, st, run.RunID, wanted[run.RunID], in.Stacks); err != nil {
			return in, err
		}
	}
	for i := range r.Runs {
		r.Runs[i].MedianStepNS = in.Steps[r.Runs[i].RunID].MedianNS
	}
	in.Runs = r.Runs
	return in, nil
}

// windowSteps is each run's analysed steps and their median length.
func windowSteps(ctx context.Context, st *duck.Store) (map[string]causes.StepWindow, error) {
	// the steps as the account measures them on the GPU timeline, where
	// it has them (the report's one step length), else the host's ranges
	byRun, err := st.QueryByKey(ctx, `
		WITH acct AS (SELECT DISTINCT run_id, rank, step, start_ns, end_ns FROM step_account),
		s AS (SELECT * FROM acct UNION ALL
		      SELECT run_id, rank, step, start_ns, end_ns FROM steps x
		      WHERE NOT EXISTS (SELECT 1 FROM acct a WHERE a.run_id = x.run_id AND a.rank = x.rank))
		SELECT s.run_id, count(DISTINCT s.step)::DOUBLE, median(s.end_ns - s.start_ns)::DOUBLE
		FROM s JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
		WHERE (w.step_lo IS NULL OR s.step >= w.step_lo) AND (w.step_hi IS NULL OR s.step <= w.step_hi)
		GROUP BY s.run_id`, 2)
	if err != nil {
		return nil, err
	}
	out := map[string]causes.StepWindow{}
	for run, v := range byRun {
		out[run] = causes.StepWindow{Steps: int(v[0]), MedianNS: v[1]}
	}
	return out, nil
}

func loadLate(ctx context.Context, st *duck.Store) ([]causes.Late, error) {
	rows, err := st.Query(ctx, `
		SELECT run_id, comm, collective, coalesce(host, ''), coalesce(host_op, ''), coalesce(step, -1), seq, rank, host_stack_id,
		       block_ns, seg_ns, peer_seg_ns, compute_excess_ns, mem_excess_ns, idle_excess_ns, pageable_excess_ns, host_excess_ns,
		       kernels, peer_kernels, sync_calls, peer_sync_calls, arrival_ts
		FROM late_arrivals ORDER BY run_id, step, rank, comm, seq`)
	if err != nil {
		return nil, fmt.Errorf("late arrivals: %w", err)
	}
	defer rows.Close()
	var out []causes.Late
	for rows.Next() {
		var l causes.Late
		if err := rows.Scan(&l.Run, &l.Comm, &l.Collective, &l.Host, &l.HostOp, &l.Step, &l.Seq, &l.Rank, &l.HostStack,
			&l.Block, &l.Seg, &l.PeerSeg, &l.Compute, &l.Mem, &l.Idle, &l.Pageable, &l.HostX,
			&l.Kernels, &l.PeerKernels, &l.Sync, &l.PeerSync, &l.At); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// loadWaiters is, per late rank, how long each peer waited for it.
func loadWaiters(ctx context.Context, st *duck.Store) (map[causes.WaitKey][]report.Waiter, error) {
	rows, err := st.Query(ctx, `
		WITH late AS (SELECT run_id, comm, step, seq, rank AS late_rank FROM collective_instances WHERE is_last AND block_ns > 0)
		SELECT c.run_id, l.late_rank, c.rank, sum(c.wait_ns)
		FROM collective_instances c
		JOIN late l ON l.run_id = c.run_id AND l.comm = c.comm AND l.step IS NOT DISTINCT FROM c.step AND l.seq = c.seq
		WHERE c.rank <> l.late_rank
		GROUP BY ALL ORDER BY 1, 2, 4 DESC, 3`)
	if err != nil {
		return nil, fmt.Errorf("waiters: %w", err)
	}
	defer rows.Close()
	out := map[causes.WaitKey][]report.Waiter{}
	for rows.Next() {
		var k causes.WaitKey
		var w report.Waiter
		if err := rows.Scan(&k.Run, &k.Rank, &w.Rank, &w.WaitNS); err != nil {
			return nil, err
		}
		out[k] = append(out[k], w)
	}
	return out, rows.Err()
}

// loadAccount reads step_account, per run, in order of rank and step.
func loadAccount(ctx context.Context, st *duck.Store) (map[string][]causes.AccountRow, error) {
	// read as Arrow: r512's 2.5M events make rows enough that database/sql's
	// scan of each value was most of the read
	rdr, err := st.QueryArrow(ctx, `
		SELECT a.run_id, a.rank::INTEGER, coalesce(a.step, -1)::INTEGER, a.start_ns::BIGINT, a.end_ns::BIGINT, a.complete::BOOLEAN,
		       coalesce((w.step_lo IS NULL OR a.step >= w.step_lo) AND (w.step_hi IS NULL OR a.step <= w.step_hi), true),
		       a.category, a.cause, coalesce(a.subject, ''), coalesce(a.stack_id, -1)::INTEGER, a.ns::BIGINT, a.intervals::BIGINT, a.longest_ns::BIGINT
		FROM step_account a LEFT JOIN analysis_window w ON w.run_id = a.run_id AND w.rank = a.rank
		ORDER BY a.run_id, a.rank, a.start_ns, a.category, a.cause, a.ns DESC, a.subject`)
	if err != nil {
		return nil, fmt.Errorf("step account: %w", err)
	}
	defer rdr.Release()
	out := map[string][]causes.AccountRow{}
	// the batch's memory goes with it: keep one copy of each string
	interned := map[string]string{}
	intern := func(a *array.String, i int) string {
		v := a.Value(i)
		if s, ok := interned[v]; ok {
			return s
		}
		s := strings.Clone(v)
		interned[s] = s
		return s
	}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		run, ok0 := rec.Column(0).(*array.String)
		rank, ok1 := rec.Column(1).(*array.Int32)
		step, ok2 := rec.Column(2).(*array.Int32)
		start, ok3 := rec.Column(3).(*array.Int64)
		end, ok4 := rec.Column(4).(*array.Int64)
		complete, ok5 := rec.Column(5).(*array.Boolean)
		inWin, ok6 := rec.Column(6).(*array.Boolean)
		cat, ok7 := rec.Column(7).(*array.String)
		cause, ok8 := rec.Column(8).(*array.String)
		subject, ok9 := rec.Column(9).(*array.String)
		stack, ok10 := rec.Column(10).(*array.Int32)
		ns, ok11 := rec.Column(11).(*array.Int64)
		intervals, ok12 := rec.Column(12).(*array.Int64)
		longest, ok13 := rec.Column(13).(*array.Int64)
		if !(ok0 && ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && ok8 && ok9 && ok10 && ok11 && ok12 && ok13) {
			return nil, fmt.Errorf("step account: unexpected column types %s", rec.Schema())
		}
		if n := int(rec.NumRows()); n > 0 && run.Value(0) == run.Value(n-1) {
			k := intern(run, 0)
			out[k] = slices.Grow(out[k], n) // sorted by run: most batches are one run's
		}
		for i := range int(rec.NumRows()) {
			r := causes.AccountRow{Rank: int(rank.Value(i)), Step: int(step.Value(i)), StartNS: start.Value(i), EndNS: end.Value(i),
				Complete: complete.Value(i), InWindow: inWin.Value(i), Cat: intern(cat, i), Cause: intern(cause, i),
				Subject: intern(subject, i), Stack: stack.Value(i), NS: ns.Value(i), Intervals: intervals.Value(i), LongestNS: longest.Value(i)}
			k := intern(run, i)
			out[k] = append(out[k], r)
		}
	}
	return out, rdr.Err()
}

// loadRecorded is each run's host events recorded in a typical analysed
// step (causes.Recorded): the events of the steps in the analysis window,
// over the steps, a mean over the ranks.
func loadRecorded(ctx context.Context, st *duck.Store) (map[string]causes.Recorded, error) {
	rows, err := st.Query(ctx, `
		WITH per AS (
		  SELECT s.run_id, s.rank, count(DISTINCT s.step) AS steps,
		         count(*) FILTER (WHERE s.kind = 'cpu_op') AS ops,
		         count(*) FILTER (WHERE s.kind IN ('runtime', 'driver')) AS calls,
		         count(*) FILTER (WHERE s.kind = 'python') AS python
		  FROM slices s LEFT JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
		  WHERE s.kind IN ('cpu_op', 'runtime', 'driver', 'python') AND s.step IS NOT NULL
		    AND (w.step_lo IS NULL OR s.step >= w.step_lo) AND (w.step_hi IS NULL OR s.step <= w.step_hi)
		  GROUP BY s.run_id, s.rank)
		SELECT run_id, avg(ops / steps), avg(calls / steps), avg(python / steps)
		FROM per WHERE steps > 0 GROUP BY run_id`)
	if err != nil {
		return nil, fmt.Errorf("recorded host events: %w", err)
	}
	defer rows.Close()
	out := map[string]causes.Recorded{}
	for rows.Next() {
		var run string
		var r causes.Recorded
		if err := rows.Scan(&run, &r.Ops, &r.Calls, &r.Python); err != nil {
			return nil, err
		}
		out[run] = r
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return out, loadCaptured(ctx, st, out)
}

// loadCaptured adds to each run's Recorded its launch calls, and those
// made inside a stream capture: after the thread's last
// cudaStreamBeginCapture (hipStream... on ROCm) that no EndCapture
// closed (an as-of join on the thread's capture calls). Runs without a
// capture call cost one scan of the calls.
func loadCaptured(ctx context.Context, st *duck.Store, out map[string]causes.Recorded) error {
	rows, err := st.Query(ctx, `
		WITH m AS (
		  SELECT run_id, rank, pid, tid, ts, name LIKE '%BeginCapture%' AS open
		  FROM slices
		  WHERE kind IN ('runtime', 'driver') AND (name LIKE '%StreamBeginCapture%' OR name LIKE '%StreamEndCapture%')),
		l AS (
		  SELECT run_id, rank, pid, tid, ts FROM slices
		  WHERE kind IN ('runtime', 'driver') AND name LIKE '%Launch%' AND name NOT LIKE '%GraphLaunch%'
		    AND run_id IN (SELECT run_id FROM m))
		SELECT l.run_id, count(*)::DOUBLE, (count(*) FILTER (WHERE m.open))::DOUBLE
		FROM l ASOF LEFT JOIN m ON m.run_id = l.run_id AND m.rank = l.rank AND m.pid = l.pid AND m.tid = l.tid AND m.ts <= l.ts
		GROUP BY l.run_id`)
	if err != nil {
		return fmt.Errorf("captured launches: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var run string
		var launches, captured float64
		if err := rows.Scan(&run, &launches, &captured); err != nil {
			return err
		}
		r := out[run]
		r.Launches, r.Captured = launches, captured
		out[run] = r
	}
	return rows.Err()
}

// stackPaths are the call stacks of (rank, stack id) pairs of a run, each
// as its frames from the outermost, the last few.
func stackPaths(ctx context.Context, st *duck.Store, run string, want [][2]int, out map[causes.StackKey]string) error {
	if len(want) == 0 {
		return nil
	}
	var pairs []string
	for _, k := range want {
		pairs = append(pairs, fmt.Sprintf("(%d, %d)", k[0], k[1]))
	}
	slices.Sort(pairs)
	rows, err := st.Query(ctx, `
		WITH RECURSIVE chain AS (
		    SELECT rank, stack_id AS leaf, stack_id AS id, parent_id, depth, name
		    FROM stacks WHERE run_id = ? AND (rank, stack_id) IN (`+strings.Join(pairs, ", ")+`)
		    UNION ALL
		    SELECT c.rank, c.leaf, s.stack_id, s.parent_id, s.depth, s.name
		    FROM chain c JOIN stacks s ON s.run_id = ? AND s.rank = c.rank AND s.stack_id = c.parent_id
		)
		SELECT rank, leaf, list(name ORDER BY depth) FROM chain GROUP BY rank, leaf`, run, run)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var rank, leaf int
		var names any
		if err := rows.Scan(&rank, &leaf, &names); err != nil {
			return err
		}
		var frames []string
		for _, v := range asList(names) {
			if s, ok := v.(string); ok && !strings.HasPrefix(s, "ProfilerStep#") {
				frames = append(frames, s)
			}
		}
		if len(frames) > 4 {
			frames = append([]string{"…"}, frames[len(frames)-4:]...)
		}
		out[causes.StackKey{Run: run, Rank: rank, Stack: int32(leaf)}] = strings.Join(frames, " > ")
	}
	return rows.Err()
}
