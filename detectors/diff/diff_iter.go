package diff

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/trainscope/trainscope/detectors/mdfmt"
	"github.com/trainscope/trainscope/sql/duck"
)

//go:embed diff_iter.sql
var diffIterSQL string

// Iterations says how a run's analysis window divides into training
// iterations, and where a rank's GPU time goes in one of them.
type Iterations struct {
	Run string `json:"run"`
	// Source is what marks an iteration: "ProfilerStep", "range" (an NVTX
	// or record_function range that repeats at a steady interval), "kernel"
	// (a compute kernel that does), or "capture" when nothing repeats and
	// the window is one unit.
	Source string `json:"source"`
	// Marker names the range or kernel; empty for ProfilerStep and capture.
	Marker string `json:"marker,omitempty"`
	// Count is iterations per rank in the window (fractional for a marker:
	// the GPU span over its period, so partial iterations at a capture's
	// edges count as parts).
	Count float64 `json:"iterations"`
	// IterNS is the wall time of one iteration: the mean ProfilerStep, or
	// the marker's mean interval.
	IterNS float64 `json:"iteration_ns"`
	Ranks  int     `json:"ranks"`
	// Per iteration and rank (mean over ranks), the GPU span split as the
	// temporal breakdown does; they sum to the GPU span per iteration.
	ComputeNS  float64 `json:"compute_ns"`
	TransferNS float64 `json:"comm_transfer_ns"`
	WaitNS     float64 `json:"comm_wait_ns"`
	MemNS      float64 `json:"memory_ns"`
	IdleNS     float64 `json:"idle_ns"`
	// rankCompute is each rank's compute time per iteration.
	rankCompute map[int]float64
	// HostNS is host time in CPU operators and Python functions per
	// iteration and rank (self time, so nested calls count once; runtime
	// calls are left out: a blocking copy or synchronize is waiting for the
	// GPU, not host work).
	HostNS float64 `json:"host_ops_ns"`
}

// Verdict answers which run is slower per iteration, by how much, and
// what moved.
type Verdict struct {
	Base     Iterations `json:"base"`
	New      Iterations `json:"new"`
	DeltaNS  float64    `json:"delta_ns_per_iteration"`
	DeltaPct float64    `json:"delta_pct"`
	Text     string     `json:"verdict"`
	// Moved lists the parts of an iteration that changed, largest first.
	Moved []Move `json:"moved"`
}

// Move is one part of an iteration's time and how it changed.
type Move struct {
	Part    string  `json:"part"`
	BaseNS  float64 `json:"base_ns"`
	NewNS   float64 `json:"new_ns"`
	DeltaNS float64 `json:"delta_ns"`
}

type marker struct {
	src, name    string
	period, mean float64 // median and mean interval between occurrences
	spread       float64 // mean distance of an interval from the median, over the median
	count        int
}

// CountIterations finds how the analysis windows of runs divide into
// iterations: ProfilerSteps where a run has them, else the repeating NVTX
// range or kernel with the longest steady period, preferring one both runs
// share so that they are cut alike.
func CountIterations(ctx context.Context, st *duck.Store, runs ...string) (map[string]*Iterations, error) {
	lits := make([]string, len(runs))
	for i, r := range runs {
		lits[i] = "'" + strings.ReplaceAll(r, "'", "''") + "'"
	}
	in := strings.Join(lits, ", ")
	out := map[string]*Iterations{}
	for _, r := range runs {
		out[r] = &Iterations{Run: r, Source: "capture", Count: 1}
	}
	// GPU span and its parts per run, mean over ranks
	rows, err := st.Query(ctx, `
WITH t AS (
    SELECT run_id, rank, sum(ns) AS busy,
           coalesce(sum(ns) FILTER (WHERE comp_active(state)), 0) AS compute,
           coalesce(sum(ns) FILTER (WHERE comm_active(state) AND NOT comp_active(state)), 0) AS transfer,
           coalesce(sum(ns) FILTER (WHERE wait_active(state) AND NOT comp_active(state) AND NOT comm_active(state)), 0) AS wait
    FROM gpu_class_time WHERE run_id IN (`+in+`) GROUP BY run_id, rank
)
SELECT sp.run_id, count(*)::INTEGER, avg(sp.span_ns)::DOUBLE, avg(t.compute)::DOUBLE, avg(t.transfer)::DOUBLE,
       avg(t.wait)::DOUBLE, avg(t.busy - t.compute - t.transfer - t.wait)::DOUBLE, avg(sp.span_ns - t.busy)::DOUBLE,
       map(list(sp.rank ORDER BY sp.rank), list(t.compute::DOUBLE ORDER BY sp.rank))::VARCHAR
FROM gpu_span sp JOIN t ON t.run_id = sp.run_id AND t.rank = sp.rank
GROUP BY sp.run_id`)
	if err != nil {
		return nil, fmt.Errorf("iterations: %w", err)
	}
	span := map[string]float64{}
	for rows.Next() {
		var run string
		var it Iterations
		var sp float64
		var perRank string
		if err := rows.Scan(&run, &it.Ranks, &sp, &it.ComputeNS, &it.TransferNS, &it.WaitNS, &it.MemNS, &it.IdleNS, &perRank); err != nil {
			rows.Close()
			return nil, err
		}
		it.rankCompute = parseRankMap(perRank)
		if o := out[run]; o != nil {
			it.Run, it.Source, it.Count, it.IterNS = run, "capture", 1, sp
			*o = it
			span[run] = sp
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	host, err := st.QueryByKey(ctx, `
SELECT run_id, (coalesce(sum(self_dur), 0) / count(DISTINCT rank))::DOUBLE FROM host_window
WHERE run_id IN (`+in+`) AND kind IN ('cpu_op', 'python')
GROUP BY run_id`, 1)
	if err != nil {
		return nil, fmt.Errorf("iterations: %w", err)
	}
	// ProfilerSteps in the window
	steps, err := st.QueryByKey(ctx, `
SELECT s.run_id, (count(*) / count(DISTINCT s.rank))::DOUBLE, avg(s.end_ns - s.start_ns)::DOUBLE
FROM steps s JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
WHERE s.run_id IN (`+in+`) AND (w.step_lo IS NULL OR s.step >= w.step_lo) AND (w.step_hi IS NULL OR s.step <= w.step_hi)
GROUP BY s.run_id`, 2)
	if err != nil {
		return nil, fmt.Errorf("iterations: %w", err)
	}
	var needMarker []string
	for _, r := range runs {
		if p, ok := steps[r]; ok && p[0] >= 1 {
			out[r].Source, out[r].Count, out[r].IterNS = "ProfilerStep", p[0], p[1]
		} else if span[r] > 0 {
			needMarker = append(needMarker, r)
		}
	}
	if len(needMarker) > 0 {
		cands, err := iterationMarkers(ctx, st, in)
		if err != nil {
			return nil, err
		}
		for r, m := range chooseMarkers(cands, needMarker) {
			o := out[r]
			o.Source, o.Marker, o.IterNS = m.src, m.name, m.mean
			o.Count = span[r] / m.mean
		}
	}
	for _, r := range runs {
		o := out[r]
		if o.Count <= 0 {
			continue
		}
		n := o.Count
		o.ComputeNS, o.TransferNS, o.WaitNS, o.MemNS, o.IdleNS = o.ComputeNS/n, o.TransferNS/n, o.WaitNS/n, o.MemNS/n, o.IdleNS/n
		for k := range o.rankCompute {
			o.rankCompute[k] /= n
		}
		if h := host[r]; len(h) == 1 {
			o.HostNS = h[0] / n
		}
		o.Count, o.IterNS = mdfmt.Round(o.Count), mdfmt.Round(o.IterNS)
		o.ComputeNS, o.TransferNS, o.WaitNS, o.MemNS, o.IdleNS, o.HostNS = mdfmt.Round(o.ComputeNS), mdfmt.Round(o.TransferNS), mdfmt.Round(o.WaitNS), mdfmt.Round(o.MemNS), mdfmt.Round(o.IdleNS), mdfmt.Round(o.HostNS)
	}
	return out, nil
}

func iterationMarkers(ctx context.Context, st *duck.Store, in string) (map[string][]marker, error) {
	rows, err := st.Query(ctx, strings.ReplaceAll(diffIterSQL, "$runs", in))
	if err != nil {
		return nil, fmt.Errorf("iteration markers: %w", err)
	}
	defer rows.Close()
	out := map[string][]marker{}
	for rows.Next() {
		var run string
		var m marker
		if err := rows.Scan(&run, &m.src, &m.name, &m.period, &m.mean, &m.spread, &m.count); err != nil {
			return nil, err
		}
		out[run] = append(out[run], m)
	}
	return out, rows.Err()
}

// chooseMarkers picks each run's iteration marker. The longest steady
// median period is the iteration (a per-layer kernel repeats too, but more
// often); of the markers within 10% of it, a range (put there to mark a
// step) before a kernel, then the steadiest (a kernel that skips an
// iteration, or moves about within one, repeats nearly as often but less
// steadily), then, among those within 2% of each other in spread, the most
// frequent (a kernel whose name changes with its input shape is seen in
// only part of the capture). One that every run needing a marker
// has is taken when there is one, so both sides are cut by the same thing.
func chooseMarkers(cands map[string][]marker, need []string) map[string]marker {
	pick := func(ms []marker) (marker, bool) {
		if len(ms) == 0 {
			return marker{}, false
		}
		longest := 0.0
		for _, m := range ms {
			longest = max(longest, m.period)
		}
		var near []marker
		for _, m := range ms {
			if m.period >= 0.9*longest {
				near = append(near, m)
			}
		}
		sort.SliceStable(near, func(i, j int) bool {
			a, b := near[i], near[j]
			if (a.src == "range") != (b.src == "range") {
				return a.src == "range"
			}
			if math.Abs(a.spread-b.spread) > 0.02 {
				return a.spread < b.spread
			}
			if a.count != b.count {
				return a.count > b.count
			}
			return a.name < b.name
		})
		return near[0], true
	}
	out := map[string]marker{}
	// shared markers, ranked by the first run's period
	var shared []marker
	if len(need) > 0 {
		for _, m := range cands[need[0]] {
			all := true
			for _, r := range need[1:] {
				if !hasMarker(cands[r], m) {
					all = false
				}
			}
			if all {
				shared = append(shared, m)
			}
		}
	}
	common, ok := pick(shared)
	for _, r := range need {
		if ok {
			for _, m := range cands[r] {
				if m.src == common.src && m.name == common.name {
					out[r] = m
				}
			}
			continue
		}
		if m, found := pick(cands[r]); found {
			out[r] = m
		}
	}
	return out
}

func hasMarker(ms []marker, m marker) bool {
	for _, x := range ms {
		if x.src == m.src && x.name == m.name {
			return true
		}
	}
	return false
}

// Judge compares two runs' iterations and names what moved, with the
// kernel and operator rows of Diff as the detail.
func Judge(base, nw Iterations, rows []Row) Verdict {
	v := Verdict{Base: base, New: nw, DeltaNS: mdfmt.Round(nw.IterNS - base.IterNS)}
	if base.IterNS > 0 {
		v.DeltaPct = mdfmt.Round(100 * (nw.IterNS - base.IterNS) / base.IterNS)
	}
	parts := []struct {
		name   string
		bv, nv float64
	}{
		{"GPU idle", base.IdleNS, nw.IdleNS},
		{"GPU compute", base.ComputeNS, nw.ComputeNS},
		{"communication transfer", base.TransferNS, nw.TransferNS},
		{"waiting in collectives for late ranks", base.WaitNS, nw.WaitNS},
		{"memory copies and sets", base.MemNS, nw.MemNS},
		{hostPart, base.HostNS, nw.HostNS},
	}
	for _, p := range parts {
		if p.bv == 0 && p.nv == 0 {
			continue
		}
		v.Moved = append(v.Moved, Move{Part: p.name, BaseNS: p.bv, NewNS: p.nv, DeltaNS: mdfmt.Round(p.nv - p.bv)})
	}
	sort.SliceStable(v.Moved, func(i, j int) bool { return math.Abs(v.Moved[i].DeltaNS) > math.Abs(v.Moved[j].DeltaNS) })
	v.Text = verdictText(v, rows)
	return v
}

// hostPart names the host's share in Moved; the other parts are the GPU
// span's and add up to it.
const hostPart = "host operators' own time (beside the GPU)"

func verdictText(v Verdict, rows []Row) string {
	var b strings.Builder
	unit := "iteration"
	if v.Base.Source == "capture" || v.New.Source == "capture" {
		unit = "capture"
	}
	rel := math.Abs(v.DeltaPct)
	switch {
	case v.Base.IterNS <= 0 || v.New.IterNS <= 0:
		b.WriteString("The runs could not be compared: one of them has no GPU activity in its window.")
		return b.String()
	case rel < 2:
		fmt.Fprintf(&b, "The runs take the same time per %s within 2%%: %s against %s (%+.1f%%).", unit, mdfmt.Duration(v.New.IterNS), mdfmt.Duration(v.Base.IterNS), v.DeltaPct)
	case v.DeltaNS > 0:
		fmt.Fprintf(&b, "The new run is %.1f%% slower per %s: %s against %s (+%s).", rel, unit, mdfmt.Duration(v.New.IterNS), mdfmt.Duration(v.Base.IterNS), mdfmt.Duration(v.DeltaNS))
	default:
		fmt.Fprintf(&b, "The new run is %.1f%% faster per %s: %s against %s (-%s).", rel, unit, mdfmt.Duration(v.New.IterNS), mdfmt.Duration(v.Base.IterNS), mdfmt.Duration(-v.DeltaNS))
	}
	if len(v.Moved) > 0 && rel >= 2 {
		var moved []string
		var host *Move
		for i, m := range v.Moved {
			// only parts that moved the same way as the total, and enough to matter
			if m.DeltaNS*v.DeltaNS <= 0 || math.Abs(m.DeltaNS) < 0.1*math.Abs(v.DeltaNS) {
				continue
			}
			if m.Part == hostPart {
				host = &v.Moved[i]
				continue
			}
			if len(moved) < 3 {
				moved = append(moved, fmt.Sprintf("%s %s (%s to %s)", m.Part, mdfmt.Signed(m.DeltaNS), mdfmt.Duration(m.BaseNS), mdfmt.Duration(m.NewNS)))
			}
		}
		if len(moved) > 0 {
			b.WriteString(" On the GPU it is " + strings.Join(moved, ", ") + ", per " + unit + " and rank.")
		}
		if r, d, rest, ok := rankMove(v); ok {
			fmt.Fprintf(&b, " GPU compute moved most on rank %d (%s an iteration; the other ranks %s on average).", r, mdfmt.Signed(d), mdfmt.Signed(rest))
		}
		if host != nil {
			fmt.Fprintf(&b, " On the host, operators' own time moved %s (%s to %s).", mdfmt.Signed(host.DeltaNS), mdfmt.Duration(host.BaseNS), mdfmt.Duration(host.NewNS))
		}
		var top []string
		for _, r := range rows {
			// runtime calls that block wait for the GPU: the table lists them,
			// the sentence names what did the work
			if r.DeltaNSStep*v.DeltaNS <= 0 || r.Kind == "host:runtime" || r.Kind == "host:driver" {
				continue
			}
			top = append(top, fmt.Sprintf("%s `%s` %s (%s)", r.Kind[strings.IndexByte(r.Kind, ':')+1:], mdfmt.ShortKernel(r.Name), mdfmt.Signed(r.DeltaNSStep), strings.ReplaceAll(r.Change, "_", " ")))
			if len(top) == 3 {
				break
			}
		}
		if len(top) > 0 {
			b.WriteString(" Largest movers: " + strings.Join(top, "; ") + ".")
		}
	}
	return b.String()
}

// rankMove finds the rank whose compute per iteration moved the most, in
// the total's direction, when it carries at least half of the ranks'
// summed move: a diff of a run with one slow rank says which.
func rankMove(v Verdict) (rank int, delta, rest float64, ok bool) {
	b, n := v.Base.rankCompute, v.New.rankCompute
	if len(b) < 2 || len(b) != len(n) {
		return 0, 0, 0, false
	}
	sum, best, bestD := 0.0, -1, 0.0
	for r, bv := range b {
		nv, found := n[r]
		if !found {
			return 0, 0, 0, false
		}
		d := nv - bv
		sum += d
		if d*v.DeltaNS > 0 && (best < 0 || math.Abs(d) > math.Abs(bestD) || math.Abs(d) == math.Abs(bestD) && r < best) {
			best, bestD = r, d
		}
	}
	if best < 0 || sum*bestD <= 0 || math.Abs(bestD) < 0.5*math.Abs(sum) || math.Abs(bestD) < 0.05*math.Abs(v.DeltaNS) {
		return 0, 0, 0, false
	}
	return best, mdfmt.Round(bestD), mdfmt.Round((sum - bestD) / float64(len(b)-1)), true
}

// parseRankMap reads DuckDB's text form of a MAP(INTEGER, DOUBLE):
// {0=1.5, 1=2.0}.
func parseRankMap(s string) map[int]float64 {
	out := map[int]float64{}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	for _, kv := range strings.Split(s, ",") {
		k, v, found := strings.Cut(strings.TrimSpace(kv), "=")
		if !found {
			continue
		}
		var r int
		var x float64
		if _, err := fmt.Sscan(k, &r); err != nil {
			continue
		}
		if _, err := fmt.Sscan(v, &x); err != nil {
			continue
		}
		out[r] = x
	}
	return out
}

// iterationLine says how a run was cut into iterations.
func iterationLine(label string, it Iterations) string {
	switch it.Source {
	case "ProfilerStep":
		return fmt.Sprintf("- %s: %s per iteration, %.4g ProfilerStep(s) a rank in the window, %d rank(s)", label, mdfmt.Duration(it.IterNS), it.Count, it.Ranks)
	case "range", "kernel":
		what := "range"
		if it.Source == "kernel" {
			what = "kernel"
		}
		return fmt.Sprintf("- %s: %s per iteration; no ProfilerSteps, so an iteration is the steady period of the %s `%s` (%.1f iterations a rank in the GPU span), %d rank(s)", label, mdfmt.Duration(it.IterNS), what, mdfmt.ShortKernel(it.Marker), it.Count, it.Ranks)
	}
	return fmt.Sprintf("- %s: %s of GPU span; no ProfilerSteps and nothing repeats at a steady interval, so the whole capture is compared, %d rank(s)", label, mdfmt.Duration(it.IterNS), it.Ranks)
}
