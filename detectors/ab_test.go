package detectors

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// TestAB is a measuring harness, not a test: with TRAINSCOPE_AB set to a
// folder of traces (bench/syn8) it loads them as analyze does (staged,
// sealed, the whole window) and prints wall and CPU time (getrusage,
// user+sys, the whole process) of two variants run alternately in this
// one process, TRAINSCOPE_AB_RUNS times each (default 6), best and
// median. TRAINSCOPE_AB_WHAT picks the pair:
//
//	timelines  the timeline pass (read, three sweeps, inserts) on 1 and on
//	           TRAINSCOPE_AB_THREADS (default 2) goroutines
//	sweeps     the three sweeps alone, after one read, likewise
//	detector   the queries of two texts of a detector (the files
//	           TRAINSCOPE_AB_A and TRAINSCOPE_AB_B), the shared views
//	           materialized once before; it says whether their rows differ
//	pass       set.Run, untimed, TRAINSCOPE_AB_THREADS workers, the tree as
//	           it is against abBaseline: the timeline sweeps on one
//	           goroutine (abWorkers)
//
// It asserts nothing about time.
func TestAB(t *testing.T) {
	dir := os.Getenv("TRAINSCOPE_AB")
	if dir == "" {
		t.Skip("TRAINSCOPE_AB names no traces")
	}
	ctx := context.Background()
	runs, _ := strconv.Atoi(os.Getenv("TRAINSCOPE_AB_RUNS"))
	runs = max(runs, 6)
	threads, _ := strconv.Atoi(os.Getenv("TRAINSCOPE_AB_THREADS"))
	threads = max(threads, 2)
	st, err := duck.Open(ctx, "", duck.Options{Threads: 1, Staged: true, MaxConns: threads})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	files, err := ingest.Discover([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: "ab", Rank: -1}); err != nil {
		t.Fatal(err)
	}
	if err := st.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Exec(ctx, fmt.Sprintf("SET threads = %d", threads)); err != nil {
		t.Fatal(err)
	}
	if err := SetWindow(ctx, st, Window{}); err != nil {
		t.Fatal(err)
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var variants [2]func() error
	names := [2]string{"A", "B"}
	switch what := os.Getenv("TRAINSCOPE_AB_WHAT"); what {
	case "", "timelines":
		if err := st.Exec(ctx, "CREATE OR REPLACE TEMP TABLE collective_instances AS SELECT * FROM main.collective_instances"); err != nil {
			t.Fatal(err)
		}
		tlPass := func(workers int) func() error {
			return func() error {
				tl, err := readTimelines(ctx, st, workers)
				if err != nil {
					return err
				}
				for _, v := range []string{"gpu_busy", "gpu_class_time", "gpu_mem_exposed"} {
					if done, err := materializeTimeline(ctx, st, tl, v, false); err != nil || !done {
						return fmt.Errorf("%s: %v %v", v, done, err)
					}
				}
				return st.Exec(ctx, "DROP TABLE temp.gpu_busy; DROP TABLE temp.gpu_class_time; DROP TABLE temp.gpu_mem_exposed")
			}
		}
		variants = [2]func() error{tlPass(1), tlPass(threads)}
		names = [2]string{"timelines, 1 goroutine", fmt.Sprintf("timelines, %d goroutines", threads)}
	case "sweeps":
		if err := st.Exec(ctx, "CREATE OR REPLACE TEMP TABLE collective_instances AS SELECT * FROM main.collective_instances"); err != nil {
			t.Fatal(err)
		}
		tl, err := readTimelines(ctx, st, 1)
		if err != nil {
			t.Fatal(err)
		}
		sweeps := func(workers int) func() error {
			return func() error {
				tl.workers = workers
				tl.busy()
				tl.classTime()
				tl.memExposed()
				return nil
			}
		}
		variants = [2]func() error{sweeps(1), sweeps(threads)}
		names = [2]string{"sweeps, 1 goroutine", fmt.Sprintf("sweeps, %d goroutines", threads)}
	case "detector":
		// two texts of one detector: TRAINSCOPE_AB_A and _B, files
		if err := materialize(ctx, st, false, threads, nil); err != nil {
			t.Fatal(err)
		}
		defer ReleaseShared(ctx, st)
		var ds [2]*Detector
		for i, env := range []string{"TRAINSCOPE_AB_A", "TRAINSCOPE_AB_B"} {
			text, err := os.ReadFile(os.Getenv(env))
			if err != nil {
				t.Fatal(err)
			}
			if ds[i], err = Parse(os.Getenv(env), text); err != nil {
				t.Fatal(err)
			}
			names[i] = os.Getenv(env)
			d := ds[i]
			tbl := fmt.Sprintf("_ab_%d", i)
			variants[i] = func() error {
				return st.Exec(ctx, "CREATE OR REPLACE TEMP TABLE "+tbl+" AS "+d.SQL, d.args()...)
			}
		}
		defer func() {
			var n, diff int
			if err := st.Conn().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM _ab_0),
				(SELECT count(*) FROM (SELECT * FROM _ab_0 EXCEPT ALL SELECT * FROM _ab_1)) +
				(SELECT count(*) FROM (SELECT * FROM _ab_1 EXCEPT ALL SELECT * FROM _ab_0))`).Scan(&n, &diff); err != nil {
				t.Fatal(err)
			}
			t.Logf("A gave %d rows; %d rows differ between A and B", n, diff)
		}()
	case "pass":
		set, err := NewSet(Config{})
		if err != nil {
			t.Fatal(err)
		}
		set.Workers = threads
		run := func(base bool) func() error {
			return func() error {
				abBaseline = base
				defer func() { abBaseline = false }()
				res, err := set.Run(ctx, st)
				for _, r := range res {
					if r.Err != nil && err == nil {
						err = fmt.Errorf("%s: %w", r.Detector.Name, r.Err)
					}
				}
				return err
			}
		}
		variants = [2]func() error{run(true), run(false)}
		names = [2]string{"pass, baseline", "pass, this tree"}
	default:
		t.Fatalf("TRAINSCOPE_AB_WHAT %q", what)
	}
	var wall, used [2][]time.Duration
	for i := range 2 * runs {
		v := i % 2
		if (i/2)%2 == 1 {
			v = 1 - v // ABBA: neither always runs first
		}
		w0, c0 := time.Now(), cpu()
		if err := variants[v](); err != nil {
			t.Fatal(err)
		}
		wall[v], used[v] = append(wall[v], time.Since(w0)), append(used[v], cpu()-c0)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	for v := range 2 {
		slices.Sort(wall[v])
		slices.Sort(used[v])
		t.Logf("%-28s wall best %v median %v, CPU best %v median %v (%d runs)", names[v],
			wall[v][0].Round(time.Millisecond), wall[v][runs/2].Round(time.Millisecond),
			used[v][0].Round(time.Millisecond), used[v][runs/2].Round(time.Millisecond), runs)
	}
	t.Logf("load average at the end: %s", load)
}

// abBaseline, set by TestAB's "pass" baseline, has a change under test
// take its old path.
var abBaseline bool

func init() {
	abWorkers = func(w int) int {
		if abBaseline {
			return 1
		}
		return w
	}
}
