package detectors

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/sql/duck"
)

// Window selects the steps detectors look at. Zero values mean the default:
// every step but the last when a rank has two or more (the last one is
// often cut short by the profiler), else the whole trace.
type Window struct {
	StepLo, StepHi int
	Set            bool
}

// Result is one detector's output. A detector that failed has Err set and
// no rows: the others still ran, and the report says which one is missing.
type Result struct {
	Detector *Detector
	Columns  []string
	Rows     [][]any
	Elapsed  time.Duration
	// Planning and Executing split the detector's query, when the pass
	// was timed (Set.Timed): DuckDB's binding, optimizers and physical
	// planning, and the rest of its latency. Storing the rows is neither.
	Planning, Executing time.Duration
	Err                 error
}

// keyColumns of metric rows; every other column is a number.
var metricKeys = map[string]bool{"run_id": true, "rank": true, "step_lo": true, "step_hi": true, "subject": true}

// findingColumns a finding detector may return.
var findingColumns = map[string]bool{"run_id": true, "rank": true, "host": true, "step_lo": true, "step_hi": true,
	"subject": true, "metric": true, "value": true, "threshold": true, "message": true, "severity": true,
	"fix": true, "evidence": true, "impact": true, "validation": true, "confidence": true, "needs": true}

// SetWindow fills analysis_window for every rank in the database.
func SetWindow(ctx context.Context, st *duck.Store, w Window) error {
	if err := st.Exec(ctx, "DELETE FROM analysis_window"); err != nil {
		return err
	}
	if w.Set {
		return st.Exec(ctx, `INSERT INTO analysis_window SELECT run_id, rank, ?, ?, row_number() OVER (ORDER BY run_id, rank) FROM ranks`, w.StepLo, w.StepHi)
	}
	return st.Exec(ctx, `
INSERT INTO analysis_window
SELECT r.run_id, r.rank,
       CASE WHEN count(DISTINCT s.step) >= 2 THEN min(s.step) END,
       CASE WHEN count(DISTINCT s.step) >= 2 THEN max(s.step) FILTER (WHERE s.step < (SELECT max(step) FROM steps x WHERE x.run_id = r.run_id AND x.rank = r.rank)) END,
       row_number() OVER (ORDER BY r.run_id, r.rank)
FROM ranks r LEFT JOIN steps s ON s.run_id = r.run_id AND s.rank = r.rank
GROUP BY r.run_id, r.rank`)
}

// Run runs every detector of the set, metrics first (findings read their
// tables, metric_<name>), replacing earlier results of the same runs. On an
// in-memory store with Workers > 1 the detectors of each kind run on that
// many connections at once. The shared views it computes for them are
// dropped before it returns; Analyze keeps them for the report too.
func (s *Set) Run(ctx context.Context, st *duck.Store) ([]Result, error) {
	return s.run(ctx, st, false)
}

// run is Run; keep leaves the shared views computed (the caller drops them
// with ReleaseShared).
func (s *Set) run(ctx context.Context, st *duck.Store, keep bool) ([]Result, error) {
	// config audit findings belong to RunAudit; leave them
	if err := st.Exec(ctx, "DELETE FROM findings WHERE run_id IN (SELECT run_id FROM ranks) AND category NOT IN ('config', 'config_memory')"); err != nil {
		return nil, err
	}
	if err := st.Exec(ctx, "DELETE FROM metrics WHERE run_id IN (SELECT run_id FROM ranks)"); err != nil {
		return nil, err
	}
	tables, err := clearMetricTables(ctx, st)
	if err != nil {
		return nil, err
	}
	tables.bare = s.Uncommented
	if err := recordGPUSpecs(ctx, st); err != nil {
		return nil, err
	}
	shared := s.Workers > 1 && st.Path == ""
	if err := materialize(ctx, st, shared, s.Workers, s.Timed); err != nil {
		ReleaseShared(context.WithoutCancel(ctx), st)
		return nil, err
	}
	workers := 1
	if shared {
		workers = s.Workers
	}
	res, err := s.runKinds(ctx, st, workers, tables, KindMetric, KindFinding)
	if err != nil || !keep {
		ReleaseShared(context.WithoutCancel(ctx), st)
	}
	return res, err
}

// runKinds runs the set's detectors of each kind in turn (metrics before
// the findings that read them) and collects their results, in the set's
// order. The detectors of one kind share a queue that workers connections
// take from: the store's own and forks of it. A detector that fails is a
// Result with Err set, not the end of the pass: one broken query (or one
// input it did not foresee) must not hide every other detector's findings.
// Only a cancelled context stops the pass. tables are the metric tables as
// the pass found them (nil: none of kinds is KindMetric).
func (s *Set) runKinds(ctx context.Context, st *duck.Store, workers int, tables *metricTables, kinds ...string) ([]Result, error) {
	byKind := make([][]*Detector, len(kinds))
	most := 0
	for k, kind := range kinds {
		for _, d := range s.Detectors {
			if d.Kind == kind {
				byKind[k] = append(byKind[k], d)
			}
		}
		most = max(most, len(byKind[k]))
	}
	// more connections than detectors of a kind would sit idle; more than
	// the store may fork are not to be had (a fork never waits for one)
	workers = min(workers, most, st.Forks()+1)
	stores := []*duck.Store{st}
	defer func() {
		for _, f := range stores[1:] {
			f.Close()
		}
	}()
	for len(stores) < workers {
		f, err := st.Fork(ctx)
		if errors.Is(err, duck.ErrNoConn) {
			break // someone else holds the rest: run on what there is
		}
		if err != nil {
			return nil, err
		}
		stores = append(stores, f)
	}
	var out []Result
	var progress sync.Mutex
	done, total := 0, 0
	for _, ds := range byKind {
		total += len(ds)
	}
	for k := range kinds {
		ds := byKind[k]
		res := make([]Result, len(ds))
		var next atomic.Int64
		g, gctx := errgroup.WithContext(ctx)
		for _, w := range stores {
			g.Go(func() error {
				for i := int(next.Add(1) - 1); i < len(ds); i = int(next.Add(1) - 1) {
					r, err := runOne(gctx, ds[i], w, s.Timed != nil, tables)
					if err != nil {
						return err
					}
					res[i] = r
					if s.Progress != nil {
						progress.Lock()
						done++
						s.Progress(done, total)
						progress.Unlock()
					}
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return out, err
		}
		for _, r := range res {
			s.timed(r)
		}
		out = append(out, res...)
	}
	return out, nil
}

// runOne runs d; its failure is its Result's Err, unless ctx was cancelled.
func runOne(ctx context.Context, d *Detector, st *duck.Store, profile bool, tables *metricTables) (Result, error) {
	r, err := d.runProfiled(ctx, st, profile, tables)
	if err != nil {
		if ctx.Err() != nil {
			return r, err
		}
		r = Result{Detector: d, Err: err, Elapsed: r.Elapsed}
	}
	return r, nil
}

func (s *Set) timed(r Result) {
	if s.Timed != nil {
		what := "detector " + r.Detector.Name
		if r.Planning > 0 || r.Executing > 0 {
			what += fmt.Sprintf(" (planning %s, executing %s)", r.Planning.Round(100*time.Microsecond), r.Executing.Round(100*time.Microsecond))
		}
		s.Timed(what, r.Elapsed)
	}
	if s.Planned != nil && (r.Planning > 0 || r.Executing > 0) {
		s.Planned(r.Planning, r.Executing)
	}
}

// recordGPUSpecs adds the catalog entry of every GPU name the ranks report
// and gpu_specs lacks; unknown GPUs get no row (their MFU stays unknown).
func recordGPUSpecs(ctx context.Context, st *duck.Store) error {
	rows, err := st.Query(ctx, `SELECT DISTINCT gpu_name FROM ranks WHERE gpu_name IS NOT NULL
		AND gpu_name NOT IN (SELECT gpu_name FROM gpu_specs) ORDER BY 1`)
	if err != nil {
		return err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, n)
	}
	rows.Close()
	for _, n := range names {
		s, ok := gpu.Lookup(n)
		if !ok {
			continue
		}
		if err := st.Exec(ctx, "INSERT INTO gpu_specs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			n, s.Key, s.BF16, s.FP16, s.FP8, s.TF32, s.FP32, s.HBMGBs, s.LinkGBs, s.MemGiB); err != nil {
			return fmt.Errorf("record GPU specs: %w", err)
		}
	}
	return rows.Err()
}

// sharedViews are views several detectors read. Run computes each once into
// a temporary table of the same name, which DuckDB resolves before the view
// (also inside other views); BuildReport reads them too and drops them
// afterwards. gpu_window is not among them: it is a filter over
// slices_detail, cheaper to scan again in each detector than to copy (on
// syn8 copying its 178K rows of 29 columns took 450 ms, the detectors'
// scans of the view cost about 0.55 s less than that in all). The roofline
// views are here less for their rows than for their planning: each reader
// planned their expansion again (syn8, the detectors one after another:
// 212 ms of planning in all, 160 ms with them computed once).
// gpu_counters_wide cannot be: it reads the gpu_counters metrics, which
// are not there yet.
var sharedViews = []string{"gpu_span", "collective_instances", "collective_waits", "gpu_class_time", "gpu_busy", "gpu_mem_exposed", "host_op_time", "step_memory_peaks", "gpu_samples",
	"op_roofline_shapes", "kernel_profiles", "op_roofline_measured"}

// materialize computes the shared views. By default each becomes a
// temporary table of the same name, which only the store's connection
// sees. With shared set, each view is renamed and a table of its name
// takes its place in the database, so that forks see it too (an in-memory
// store only: a table left by a crash must not outlive the process).
// The timelines' sweeps run on workers goroutines (the threads knob).
func materialize(ctx context.Context, st *duck.Store, shared bool, workers int, timed func(string, time.Duration)) error {
	dropMaterialized(ctx, st)
	var tl *timelines // read at the first view it computes
	for _, v := range sharedViews {
		t0 := time.Now()
		if timelineViews[v] && !sqlTimelines {
			if tl == nil {
				var err error
				if tl, err = readTimelines(ctx, st, abWorkers(workers)); err != nil {
					return fmt.Errorf("materialize %s: %w", v, err)
				}
				if timed != nil {
					timed("timelines read", tl.read)
				}
				t0 = time.Now()
			}
			done, err := materializeTimeline(ctx, st, tl, v, shared)
			if err != nil {
				return fmt.Errorf("materialize %s: %w", v, err)
			}
			if done {
				if timed != nil {
					timed("view "+v, time.Since(t0))
				}
				continue
			}
		}
		q := fmt.Sprintf("CREATE TEMP TABLE %s AS SELECT * FROM main.%s", v, v)
		if shared {
			q = fmt.Sprintf("ALTER VIEW main.%s RENAME TO %s; CREATE TABLE main.%s AS SELECT * FROM main.%s", v, v+viewSuffix, v, v+viewSuffix)
		}
		if err := st.Exec(ctx, q); err != nil {
			return fmt.Errorf("materialize %s: %w", v, err)
		}
		if timed != nil {
			timed("view "+v, time.Since(t0))
		}
	}
	return nil
}

// sqlTimelines, set by benchmarks, has the views compute the timelines.
var sqlTimelines bool

// materializeTimeline makes the table of timeline view v (see
// timelines.go) and fills it from tl; done is false, and no table made,
// where the view must compute its rows itself.
func materializeTimeline(ctx context.Context, st *duck.Store, tl *timelines, v string, shared bool) (done bool, err error) {
	q := fmt.Sprintf("CREATE TEMP TABLE %s (%s)", v, timelineTypes[v])
	if shared {
		q = fmt.Sprintf("ALTER VIEW main.%s RENAME TO %s; CREATE TABLE main.%s (%s)", v, v+viewSuffix, v, timelineTypes[v])
	}
	if err := st.Exec(ctx, q); err != nil {
		return false, err
	}
	done, err = tl.fill(ctx, st, v)
	if err == nil && done {
		return true, nil
	}
	// the view computes them: its table and name as they were
	undo := "DROP TABLE temp." + v
	if shared {
		undo = fmt.Sprintf("DROP TABLE main.%s; ALTER VIEW main.%s RENAME TO %s", v, v+viewSuffix, v)
	}
	if uerr := st.Exec(context.WithoutCancel(ctx), undo); uerr != nil && err == nil {
		err = uerr
	}
	return false, err
}

// viewSuffix renames a shared view while a table of its name stands in.
const viewSuffix = "__view"

// ReleaseShared drops the shared views' tables a pass computed, so the
// views read the store again. Run and Analyze call it before they return;
// dropping nothing is no error.
func ReleaseShared(ctx context.Context, st *duck.Store) { dropMaterialized(ctx, st) }

func dropMaterialized(ctx context.Context, st *duck.Store) {
	for i := len(sharedViews) - 1; i >= 0; i-- {
		st.Exec(ctx, "DROP TABLE IF EXISTS temp."+sharedViews[i])
	}
	// views renamed for a shared pass: their tables go, their names return
	rows, err := st.Query(ctx, "SELECT view_name FROM duckdb_views() WHERE schema_name = 'main' AND suffix(view_name, ?)", viewSuffix)
	if err != nil {
		return
	}
	var renamed []string
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			renamed = append(renamed, n)
		}
	}
	rows.Close()
	for _, n := range renamed {
		v := strings.TrimSuffix(n, viewSuffix)
		st.Exec(ctx, fmt.Sprintf("DROP TABLE IF EXISTS main.%s; ALTER VIEW main.%s RENAME TO %s", v, n, v))
	}
}

func (d *Detector) args() []any {
	var args []any
	for _, p := range d.Params {
		args = append(args, sql.Named(p.Name, p.Value))
	}
	return args
}

func (d *Detector) run(ctx context.Context, st *duck.Store) (Result, error) {
	return d.runProfiled(ctx, st, false, nil)
}

// runProfiled is run; with profile set, DuckDB profiles the detector's
// query and the result splits it into planning and executing. tables are
// the pass's metric tables; nil asks the catalog for d's.
func (d *Detector) runProfiled(ctx context.Context, st *duck.Store, profile bool, tables *metricTables) (Result, error) {
	start := time.Now()
	res := Result{Detector: d}
	where := fmt.Sprintf("detector %s (%s:%d)", d.Name, d.File, d.Line)
	q := "CREATE OR REPLACE TEMP TABLE _detector_out AS " + d.SQL
	if profile {
		var err error
		if res.Planning, res.Executing, err = profiledExec(ctx, st, q, d.args()...); err != nil {
			return res, fmt.Errorf("%s: %w", where, err)
		}
	} else if err := st.Exec(ctx, q, d.args()...); err != nil {
		return res, fmt.Errorf("%s: %w", where, err)
	}
	rows, err := st.Query(ctx, "SELECT * FROM _detector_out")
	if err != nil {
		return res, fmt.Errorf("%s: %w", where, err)
	}
	cols, err := rows.ColumnTypes()
	if err != nil {
		rows.Close()
		return res, err
	}
	for _, c := range cols {
		res.Columns = append(res.Columns, c.Name())
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			rows.Close()
			return res, fmt.Errorf("%s: %w", where, err)
		}
		res.Rows = append(res.Rows, vals)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("%s: %w", where, err)
	}
	if err := d.store(ctx, st, cols, tables); err != nil {
		return res, fmt.Errorf("%s: %w", where, err)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// store copies _detector_out into the metric detector's table and metrics
// (one row per number), or into findings. tables, where not nil, knows
// the metric table as it stands and hears what it becomes.
func (d *Detector) store(ctx context.Context, st *duck.Store, cols []*sql.ColumnType, tables *metricTables) error {
	has := map[string]bool{}
	for _, c := range cols {
		has[c.Name()] = true
	}
	if !has["run_id"] {
		return fmt.Errorf("output has no run_id column")
	}
	col := func(name, def string) string {
		if has[name] {
			return name
		}
		return def + " AS " + name
	}
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	if d.Kind == KindMetric {
		return d.storeMetric(ctx, st, cols, col, tables)
	}
	for _, c := range cols {
		if !findingColumns[c.Name()] {
			return fmt.Errorf("finding column %q is not one of run_id, rank, host, step_lo, step_hi, subject, metric, value, threshold, message, severity, fix, evidence, impact, validation, confidence, needs", c.Name())
		}
	}
	for _, need := range []string{"metric", "value", "message"} {
		if !has[need] {
			return fmt.Errorf("finding detectors must return a %s column", need)
		}
	}
	sev := quote(d.Severity)
	if has["severity"] {
		sev = "coalesce(severity, " + sev + ")"
	}
	fix := quote(d.Fix)
	if has["fix"] {
		fix = "coalesce(fix, " + fix + ")"
	}
	// Without a validation of its own, a finding is validated by its metric
	// falling below its threshold.
	validation := "CASE WHEN threshold IS NOT NULL THEN printf('after the change, %s should fall below %g', metric, threshold) END"
	if !has["threshold"] {
		validation = "NULL::VARCHAR"
	}
	if has["validation"] {
		validation = "coalesce(validation, " + validation + ")"
	}
	q := fmt.Sprintf(`INSERT INTO findings (run_id, detector, category, severity, rank, host, step_lo, step_hi, subject, metric, value, threshold, message, fix, evidence, impact, validation, confidence, needs)
SELECT run_id, %s, %s, %s, %s, %s, %s, %s, %s, metric, value::DOUBLE, %s, message, nullif(%s, ''), %s, %s, %s, %s, %s FROM _detector_out`,
		quote(d.Name), quote(d.Category), sev, col("rank", "NULL::INTEGER"), col("host", "NULL::VARCHAR"),
		col("step_lo", "NULL::INTEGER"), col("step_hi", "NULL::INTEGER"), col("subject", "NULL::VARCHAR"),
		thresholdExpr(has), fix, evidenceExpr(has), col("impact", "NULL::VARCHAR"), validation,
		coalesced(has, "confidence", "'measured'"), col("needs", "NULL::VARCHAR"))
	return st.Exec(ctx, q)
}

func coalesced(has map[string]bool, name, def string) string {
	if has[name] {
		return "coalesce(" + name + ", " + def + ")"
	}
	return def
}

func thresholdExpr(has map[string]bool) string {
	if has["threshold"] {
		return "threshold::DOUBLE"
	}
	return "NULL::DOUBLE"
}

func evidenceExpr(has map[string]bool) string {
	if has["evidence"] {
		return "evidence::VARCHAR"
	}
	return "NULL::VARCHAR"
}

func structList(numeric []string, quote func(string) string) string {
	parts := make([]string, 0, len(numeric))
	for _, c := range numeric {
		parts = append(parts, fmt.Sprintf("{'metric': %s, 'value': \"%s\"::DOUBLE}", quote(c), c))
	}
	return strings.Join(parts, ", ")
}

// Check runs the detector against st (normally an empty database with the
// schema) and reports SQL and output-shape errors with the file and line.
func (d *Detector) Check(ctx context.Context, st *duck.Store) error {
	_, err := d.run(ctx, st)
	if err != nil {
		return &LoadError{File: d.File, Line: d.Line, Msg: strings.TrimPrefix(err.Error(), fmt.Sprintf("detector %s (%s:%d): ", d.Name, d.File, d.Line))}
	}
	return nil
}

// profiledExec runs q on st's connection under DuckDB's detailed profiling
// and returns its planning time (binding, the optimizers, the physical
// plan) and the rest of its latency. The profile goes to a file of its
// own, read and removed at once; profiling is off again afterwards.
func profiledExec(ctx context.Context, st *duck.Store, q string, args ...any) (planning, executing time.Duration, err error) {
	f, err := os.CreateTemp("", "trainscope-profile-*.json")
	if err != nil {
		return 0, 0, err
	}
	path := f.Name()
	f.Close()
	defer os.Remove(path)
	if err := st.Exec(ctx, fmt.Sprintf("SET profiling_mode = 'detailed'; PRAGMA enable_profiling = 'json'; PRAGMA profiling_output = %s", duck.Literal(path))); err != nil {
		return 0, 0, err
	}
	err = st.Exec(ctx, q, args...)
	off := st.Exec(context.WithoutCancel(ctx), "PRAGMA disable_profiling; RESET profiling_mode")
	if err != nil {
		return 0, 0, err
	}
	if off != nil {
		return 0, 0, off
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	var p struct {
		Latency    float64 `json:"latency"`
		Planner    float64 `json:"planner"`
		Optimizers float64 `json:"all_optimizers"`
		Physical   float64 `json:"physical_planner"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return 0, 0, fmt.Errorf("read the profile: %w", err)
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	planning = sec(p.Planner + p.Optimizers + p.Physical)
	return planning, max(0, sec(p.Latency)-planning), nil
}

// abWorkers lets TestAB's baseline sweep on one goroutine.
var abWorkers = func(w int) int { return w }
