package detectors

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/trainscope/trainscope/detectors/causes"
	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/sql/duck"
)

// MaxRankBars bounds the ranks drawn in the per-rank chart: the root
// causes' ranks and those that waited longest for them first, then the
// ranks whose split differs most from the median rank's.
const MaxRankBars = 48

// MaxTimelineLanes bounds the ranks drawn on the timeline: the root
// causes' ranks and those that waited for them first, then the lowest.
const MaxTimelineLanes = 32

const timelineBuckets = 400

// buildCharts gathers the charts of every run: the per-rank split and the
// top kernels from the metric tables, the timeline from the store.
func buildCharts(ctx context.Context, st *duck.Store, rep *report.Report, perRank map[string]map[string]map[int]float64) error {
	r := &chartSource{rep, perRank}
	for _, run := range r.Runs {
		c := &report.Charts{RunID: run.RunID}
		c.Ranks, c.PerStep = r.rankTimes(run.RunID)
		c.TotalRanks = len(c.Ranks)
		c.Ranks = r.pickRankBars(run.RunID, c.Ranks, MaxRankBars)
		c.Kernels = r.topKernels(run.RunID, 12)
		c.Roofline = r.roofline(run)
		tl, err := r.loadTimeline(ctx, st, run)
		if err != nil {
			return fmt.Errorf("charts of run %s: %w", run.RunID, err)
		}
		c.Timeline = tl
		rep.SetCharts(run.RunID, c)
	}
	return nil
}

// chartSource is what the charts are drawn from: the report, and per run,
// account key and rank what a typical step spends (the verdict's).
type chartSource struct {
	*report.Report
	acctPerRank map[string]map[string]map[int]float64
}

// metricRows returns a metric table's rows of one run as column maps.
func (r *chartSource) metricRows(detector, run string) []map[string]any {
	var out []map[string]any
	for _, t := range r.Metrics {
		if t.Detector != detector {
			continue
		}
		for _, row := range t.Rows {
			m := map[string]any{}
			for i, c := range t.Columns {
				if i < len(row) {
					m[c] = row[i]
				}
			}
			if m["run_id"] == run {
				out = append(out, m)
			}
		}
	}
	return out
}

func (r *chartSource) rankTimes(run string) ([]report.RankTime, bool) {
	steps := map[int]float64{}
	for _, m := range r.metricRows("step_time", run) {
		steps[int(report.Num(m["rank"]))] = report.Num(m["steps"])
	}
	perStep := len(steps) > 0
	var out []report.RankTime
	for _, m := range r.metricRows("temporal_breakdown", run) {
		rank := int(report.Num(m["rank"]))
		n := 1.0
		if perStep {
			if steps[rank] == 0 {
				perStep = false
			} else {
				n = steps[rank]
			}
		}
		nc, tr, wt := report.Num(m["non_compute_ns"]), report.Num(m["transfer_ns"]), report.Num(m["wait_ns"])
		out = append(out, report.RankTime{Rank: rank, Compute: report.Num(m["compute_ns"]) / n, Transfer: tr / n, Wait: wt / n,
			Other: max(0, nc-tr-wt) / n, Idle: report.Num(m["idle_ns"]) / n})
	}
	if !perStep && len(steps) > 0 {
		// some rank has no steps: show every rank over the window alike
		for i := range out {
			n := steps[out[i].Rank]
			if n > 0 {
				out[i] = report.RankTime{Rank: out[i].Rank, Compute: out[i].Compute * n, Transfer: out[i].Transfer * n,
					Wait: out[i].Wait * n, Other: out[i].Other * n, Idle: out[i].Idle * n}
			}
		}
	}
	slices.SortFunc(out, func(a, b report.RankTime) int { return a.Rank - b.Rank })
	if acct := r.acctPerRank[run]; len(acct) > 0 {
		// a typical step as the account measures it, so that the bars are
		// as long as the step the verdict and step_time name; exposed
		// communication split into transfer and wait as temporal_breakdown
		// splits it
		split := map[int][2]float64{}
		for _, rt := range out {
			split[rt.Rank] = [2]float64{rt.Transfer, rt.Wait}
		}
		byRank := map[int]*report.RankTime{}
		for key, ranks := range acct {
			cat, _, _ := strings.Cut(key, "/")
			for rank, ns := range ranks {
				rt := byRank[rank]
				if rt == nil {
					rt = &report.RankTime{Rank: rank}
					byRank[rank] = rt
				}
				switch cat {
				case "compute":
					rt.Compute += ns
				case "comm":
					rt.Transfer += ns
				case "copy":
					rt.Other += ns
				default:
					rt.Idle += ns
				}
			}
		}
		out = out[:0]
		for _, rank := range slices.Sorted(maps.Keys(byRank)) {
			rt := byRank[rank]
			if s := split[rank]; s[0]+s[1] > 0 {
				comm := rt.Transfer
				rt.Wait = comm * s[1] / (s[0] + s[1])
				rt.Transfer = comm - rt.Wait
			}
			out = append(out, *rt)
		}
		return out, true
	}
	return out, perStep
}

// pickRankBars keeps at most n ranks, in rank order: the ranks of the
// run's root causes and their waiters, then those whose share of idle,
// wait and other time is furthest from the median rank's.
func (r *chartSource) pickRankBars(run string, all []report.RankTime, n int) []report.RankTime {
	if len(all) <= n {
		return all
	}
	keep := map[int]bool{}
	for _, c := range r.Causes {
		if c.RunID != run {
			continue
		}
		if c.Rank != nil {
			keep[*c.Rank] = true
		}
		for _, x := range c.Ranks {
			keep[x] = true
		}
		for i, w := range c.Waiters {
			if i < 3 {
				keep[w.Rank] = true
			}
		}
	}
	off := func(rt report.RankTime) float64 {
		tot := rt.Compute + rt.Transfer + rt.Wait + rt.Other + rt.Idle
		if tot <= 0 {
			return 0
		}
		return (rt.Wait + rt.Other + rt.Idle) / tot
	}
	shares := make([]float64, len(all))
	for i, rt := range all {
		shares[i] = off(rt)
	}
	med, _ := causes.MedianMAD(shares)
	rest := slices.Clone(all)
	slices.SortStableFunc(rest, func(a, b report.RankTime) int {
		da, db := math.Abs(off(a)-med), math.Abs(off(b)-med)
		if da != db {
			return cmp.Compare(db, da)
		}
		return a.Rank - b.Rank
	})
	for _, rt := range rest {
		if len(keep) >= n {
			break
		}
		keep[rt.Rank] = true
	}
	var out []report.RankTime
	for _, rt := range all {
		if keep[rt.Rank] && len(out) < n {
			out = append(out, rt)
		}
	}
	return out
}

func (r *chartSource) topKernels(run string, n int) []report.KernelTime {
	var out []report.KernelTime
	for _, m := range r.metricRows("top_kernels", run) {
		name, _ := m["name"].(string)
		class, _ := m["class"].(string)
		out = append(out, report.KernelTime{Name: name, Class: class, Count: int64(report.Num(m["count"])), TotalNS: report.Num(m["sum_ns"])})
	}
	slices.SortStableFunc(out, func(a, b report.KernelTime) int {
		switch {
		case a.TotalNS > b.TotalNS:
			return -1
		case a.TotalNS < b.TotalNS:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// timelineStep picks the step to draw: a one-off stall's, else the step
// where the top cause's rank (or, with no cause, any rank) held the
// others up longest, else the first analysed step.
func (r *chartSource) timelineStep(ctx context.Context, st *duck.Store, run string) (*int, string, bool, error) {
	var top *report.Cause
	for i := range r.Causes {
		if r.Causes[i].RunID == run {
			top = &r.Causes[i]
			break
		}
	}
	if top != nil && top.Step != nil && top.Kind == "one_off_stall" {
		return top.Step, fmt.Sprintf("step %d, the one-off stall's", *top.Step), true, nil
	}
	rankFilter, who := "", "any rank"
	if top != nil && top.Rank != nil {
		rankFilter = fmt.Sprintf(" AND rank = %d", *top.Rank)
		who = fmt.Sprintf("rank %d", *top.Rank)
	}
	var step sql.NullInt64
	var block sql.NullInt64
	rows, err := st.Query(ctx, `SELECT step, sum(block_ns)::BIGINT FROM collective_instances
		WHERE run_id = ? AND is_last AND block_ns > 0`+rankFilter+`
		GROUP BY step ORDER BY 2 DESC, step LIMIT 1`, run)
	if err != nil {
		return nil, "", false, err
	}
	found := rows.Next()
	if found {
		err = rows.Scan(&step, &block)
	}
	rows.Close()
	if err != nil {
		return nil, "", false, err
	}
	if found && step.Valid {
		s := int(step.Int64)
		return &s, fmt.Sprintf("step %d, where %s held the others up longest (%s)", s, who, mdfmt.Duration(float64(block.Int64))), true, nil
	}
	rows, err = st.Query(ctx, `SELECT min(step) FROM gpu_window WHERE run_id = ?`, run)
	if err != nil {
		return nil, "", false, err
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(&step); err != nil {
			return nil, "", false, err
		}
	}
	if step.Valid {
		s := int(step.Int64)
		return &s, fmt.Sprintf("step %d, the first analysed", s), true, nil
	}
	return nil, "the analysed window (the trace has no profiler steps)", true, rows.Err()
}

// timelineRanks chooses the lanes: the run's causes' ranks and their
// waiters first, then the lowest ranks, at most MaxTimelineLanes.
func (r *chartSource) timelineRanks(run string) ([]int, int) {
	var all []int
	for _, ri := range r.Runs {
		if ri.RunID == run {
			for _, rk := range ri.Ranks {
				all = append(all, int(rk))
			}
		}
	}
	if len(all) <= MaxTimelineLanes {
		return all, len(all)
	}
	var pick []int
	add := func(rk int) {
		if len(pick) < MaxTimelineLanes && slices.Contains(all, rk) && !slices.Contains(pick, rk) {
			pick = append(pick, rk)
		}
	}
	for _, c := range r.Causes {
		if c.RunID != run {
			continue
		}
		if c.Rank != nil {
			add(*c.Rank)
		}
		for _, rk := range c.Ranks {
			add(rk)
		}
		for i, w := range c.Waiters {
			if i < 4 {
				add(w.Rank)
			}
		}
	}
	for _, rk := range all {
		add(rk)
	}
	slices.Sort(pick)
	return pick, len(all)
}

func (r *chartSource) loadTimeline(ctx context.Context, st *duck.Store, run report.RunInfo) (*report.Timeline, error) {
	step, why, ok, err := r.timelineStep(ctx, st, run.RunID)
	if err != nil || !ok {
		return nil, err
	}
	ranks, total := r.timelineRanks(run.RunID)
	if len(ranks) == 0 {
		return nil, nil
	}
	inList := make([]string, len(ranks))
	for i, rk := range ranks {
		inList[i] = fmt.Sprint(rk)
	}
	// work on each rank's clock shifted by its offset from the others
	// (collective_instances aligns them on collective ends)
	base := `WITH off AS (SELECT rank, any_value(clock_offset_ns) AS o FROM collective_instances WHERE run_id = $run GROUP BY rank),
k AS (
    SELECT g.rank, g.class, g.ts - coalesce(off.o, 0) AS s, g.end_ts - coalesce(off.o, 0) AS e,
           CASE WHEN g.class = 'COMM' THEN coalesce(g.coll_name, g.name) END AS coll
    FROM gpu_window g LEFT JOIN off ON off.rank = g.rank
    WHERE g.run_id = $run AND g.step IS NOT DISTINCT FROM $step AND g.rank IN (` + strings.Join(inList, ",") + `)
)`
	args := []any{sql.Named("run", run.RunID), sql.Named("step", step)}
	tl := &report.Timeline{Step: step, Why: why, Buckets: timelineBuckets, TotalRanks: total}
	var lo, hi sql.NullInt64
	// the step as the account has it (its window on each lane's GPU
	// timeline), so that the timeline is as long as the step the verdict
	// and step_time name; else the step's GPU work
	rows, err := st.Query(ctx, base+`, w AS (
    SELECT a.rank, min(a.start_ns) - coalesce(any_value(off.o), 0) AS s, max(a.end_ns) - coalesce(any_value(off.o), 0) AS e
    FROM step_account a LEFT JOIN off ON off.rank = a.rank
    WHERE a.run_id = $run AND a.step IS NOT DISTINCT FROM $step AND a.rank IN (`+strings.Join(inList, ",")+`)
    GROUP BY a.rank)
SELECT coalesce((SELECT min(s) FROM w), min(s)), coalesce((SELECT max(e) FROM w), max(e)) FROM k`, args...)
	if err != nil {
		return nil, err
	}
	if rows.Next() {
		err = rows.Scan(&lo, &hi)
	}
	rows.Close()
	if err != nil || !lo.Valid || hi.Int64 <= lo.Int64 {
		return nil, err
	}
	tl.StartNS, tl.EndNS = lo.Int64, hi.Int64
	bw := max(1, (tl.EndNS-tl.StartNS+int64(timelineBuckets)-1)/int64(timelineBuckets))
	lanes := map[int]*report.Lane{}
	for _, rk := range ranks {
		l := &report.Lane{Rank: rk, Compute: make([]float64, timelineBuckets)}
		lanes[rk] = l
		tl.Lanes = append(tl.Lanes, *l)
	}
	args = append(args, sql.Named("t0", tl.StartNS), sql.Named("bw", bw))
	rows, err = st.Query(ctx, base+`, b AS (
    SELECT rank, s, e, unnest(range((s - $t0) // $bw, (greatest(e - 1, s) - $t0) // $bw + 1)) AS b FROM k WHERE class = 'COMP'
)
SELECT rank, b, sum(least(e, $t0 + (b + 1) * $bw) - greatest(s, $t0 + b * $bw))::DOUBLE FROM b GROUP BY rank, b`, args...)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var rk, b int
		var ns float64
		if err := rows.Scan(&rk, &b, &ns); err != nil {
			rows.Close()
			return nil, err
		}
		if l := lanes[rk]; l != nil && b >= 0 && b < timelineBuckets {
			l.Compute[b] = min(1, ns/float64(bw))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = st.Query(ctx, `SELECT rank, coalesce(coll_name, name), arrival_ns, arrival_ns + wait_ns, aligned_end_ns, is_last AND block_ns > 0, block_ns
		FROM collective_instances
		WHERE run_id = $run AND step IS NOT DISTINCT FROM $step AND rank IN (`+strings.Join(inList, ",")+`)
		ORDER BY rank, arrival_ns`, args[:2]...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var rk int
		var c report.CollBar
		if err := rows.Scan(&rk, &c.Name, &c.StartNS, &c.WaitEndNS, &c.End, &c.Last, &c.BlockNS); err != nil {
			return nil, err
		}
		if l := lanes[rk]; l != nil {
			l.Colls = append(l.Colls, c)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if err := unmatchedColls(ctx, st, base, args, lanes); err != nil {
		return nil, err
	}
	for i := range tl.Lanes {
		tl.Lanes[i] = *lanes[tl.Lanes[i].Rank]
	}
	return tl, nil
}

// unmatchedColls draws the collective kernels of the lanes that have no
// matched collective in the step (one rank traced, so no peer to match):
// each as transfer, on the lane's own clock, since without its peers the
// wait in it cannot be told apart.
func unmatchedColls(ctx context.Context, st *duck.Store, base string, args []any, lanes map[int]*report.Lane) error {
	var bare []string
	for rk, l := range lanes {
		if len(l.Colls) == 0 {
			bare = append(bare, fmt.Sprint(rk))
		}
	}
	if len(bare) == 0 {
		return nil
	}
	slices.Sort(bare)
	rows, err := st.Query(ctx, base+`
SELECT rank, coll, s, e FROM k WHERE class = 'COMM' AND rank IN (`+strings.Join(bare, ",")+`) ORDER BY rank, s, e`, args[:2]...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var rk int
		var c report.CollBar
		if err := rows.Scan(&rk, &c.Name, &c.StartNS, &c.End); err != nil {
			return err
		}
		c.WaitEndNS = c.StartNS
		lanes[rk].Colls = append(lanes[rk].Colls, c)
	}
	return rows.Err()
}
