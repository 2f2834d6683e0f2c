// Command accuracy measures how well trainscope's detectors find known
// faults. A fault injector generates multi-rank, multi-host Kineto traces
// of a tensor- and data-parallel training loop, injects one labelled fault
// per scenario (a slow rank, host or link, a data-loader stall, host
// synchronisation, pageable copies, a hung rank, launch-bound tiny
// kernels) with seeded random placement and strength, and adds clean
// controls. Each scenario is loaded in process into an in-memory store,
// every built-in detector runs with its default thresholds, and the
// findings are scored against the injected label: precision, recall and
// F1 per fault type and overall, and localisation accuracy.
//
//	go run -tags duckdb_arrow ./bench/accuracy -n 200 -seed 1 -out bench/ACCURACY.md
//
// See bench/ACCURACY.md for the method and the measured numbers.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trainscope/trainscope/detectors"
)

// config is everything a run of the harness depends on, for the report.
type config struct {
	n, clean int
	weak     int
	double   int    // scenarios with two faults
	sizes    []int  // rank counts the scenarios cycle through (each with topo's tp and steps)
	only     []int  // scenario numbers to run (all when empty)
	real     string // folder of real traces to scale, "" to skip
	realN    int
	single   int
	workers  int
	seed     uint64
	topo     topology
}

func main() {
	var c config
	flag.IntVar(&c.n, "n", 200, "fault scenarios (spread evenly over the fault types)")
	flag.IntVar(&c.clean, "clean", 0, "clean controls (default max(20, n/8))")
	flag.IntVar(&c.weak, "weak", 0, "extra fault scenarios at strengths down to the thresholds, scored in a separate table")
	flag.IntVar(&c.double, "double", -1, "extra scenarios with two faults of different types on different ranks (default n/8)")
	sizes := flag.String("sizes", "8,16,32,64,128", "rank counts the scenarios cycle through; a size below 16 puts ranks/2 on a host")
	flag.StringVar(&c.real, "real", "bench/sample", "real traces to scale to -ranks for a clean control and slow-rank injections (\"\" skips)")
	flag.IntVar(&c.realN, "real-n", 8, "slow-rank injections into the scaled real traces")
	flag.IntVar(&c.single, "single", 4, "single-GPU runs of each bench/gpusim scenario (healthy, stall, input, sync, copies, FP32, launch-bound)")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of every random choice")
	flag.IntVar(&c.topo.ranks, "ranks", 16, "ranks per scenario")
	flag.IntVar(&c.topo.perHost, "per-host", 8, "ranks per host")
	flag.IntVar(&c.topo.tp, "tp", 4, "tensor-parallel group size (groups of consecutive ranks)")
	flag.IntVar(&c.topo.steps, "steps", 8, "profiler steps per trace (the last one is outside the analysis window)")
	flag.IntVar(&c.workers, "workers", runtime.GOMAXPROCS(0), "scenarios analysed at once, each with one DuckDB thread and up to 512MB (default: GOMAXPROCS)")
	out := flag.String("out", "", "write the markdown report here (e.g. bench/ACCURACY.md)")
	verbose := flag.Bool("v", false, "log every scenario")
	keep := flag.Bool("keep", false, "keep the generated traces (their folders are logged)")
	flag.Func("only", "run only these scenario numbers of the log (comma-separated), to look at one again with -keep", func(v string) error {
		for _, f := range strings.Split(v, ",") {
			var i int
			if _, err := fmt.Sscan(strings.TrimSpace(f), &i); err != nil {
				return fmt.Errorf("%q is not a scenario number", f)
			}
			c.only = append(c.only, i)
		}
		return nil
	})
	flag.Parse()
	if c.clean == 0 {
		c.clean = max(20, c.n/8)
	}
	if c.double < 0 {
		c.double = c.n / 8
	}
	for _, f := range strings.Split(*sizes, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "accuracy: -sizes: %q is not a rank count\n", f)
			os.Exit(2)
		}
		c.sizes = append(c.sizes, n)
	}
	for _, n := range append([]int{c.topo.ranks}, c.sizes...) {
		if t := c.topoOf(n); t.ranks%t.tp != 0 || t.ranks < 2*t.perHost || t.steps < 4 {
			fmt.Fprintf(os.Stderr, "accuracy: %d ranks: need ranks divisible by tp (%d), at least two hosts and four steps\n", n, t.tp)
			os.Exit(2)
		}
	}
	start := time.Now()
	res, weak, err := run(context.Background(), c, os.Stderr, *verbose, *keep)
	if err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
	wall := time.Since(start)
	var b strings.Builder
	writeTable(&b, res)
	fmt.Fprintln(&b, "\nHeadline (the report's first root cause: place and type):")
	fmt.Fprintln(&b)
	writeHeadlines(&b, res.outs)
	if c.double > 0 {
		fmt.Fprintln(&b)
		writeDoubles(&b, res.outs)
	}
	var rr *realResult
	if c.real != "" {
		set, err := detectors.NewSet(detectors.Config{})
		if err == nil {
			rr = &realResult{}
			rr.clean, rr.res, err = runReal(context.Background(), set, c.real, c.topo, c.realN, c.seed)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "accuracy: real traces:", err)
			os.Exit(1)
		}
		wall = time.Since(start)
		fmt.Fprintf(&b, "\nReal traces (%s scaled to %d ranks): clean run fault-type findings: %d\n\n", c.real, c.topo.ranks, len(rr.clean))
		writeTable(&b, rr.res)
	}
	var single []singleOutcome
	if c.single > 0 {
		set, err := detectors.NewSet(detectors.Config{})
		if err == nil {
			single, err = runSingle(context.Background(), set, c.single, c.seed, os.Stderr, *keep)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "accuracy: single GPU:", err)
			os.Exit(1)
		}
		wall = time.Since(start)
		fmt.Fprintf(&b, "\nSingle-GPU runs (bench/gpusim, strengths 0.5-1.5 of bench/gpu's doses):\n\n")
		writeSingle(&b, single)
	}
	if c.weak > 0 {
		fmt.Fprintln(&b, "\nWeak faults (strengths down to the thresholds):")
		fmt.Fprintln(&b)
		writeTable(&b, weak)
	}
	fmt.Print(b.String())
	fmt.Printf("\n%d scenarios in %s (%d CPUs)\n", len(res.outs)+len(weak.outs), wall.Round(time.Second), runtime.GOMAXPROCS(0))
	if *out != "" {
		if err := writeReport(*out, c, res, weak, rr, single, wall); err != nil {
			fmt.Fprintln(os.Stderr, "accuracy:", err)
			os.Exit(1)
		}
	}
}

// realResult is the real-trace check's outcome.
type realResult struct {
	clean []finding
	res   *results
}

// topoOf is the topology of a scenario of n ranks: the flags' tensor
// parallelism and steps, eight ranks a host (n/2 below 16 ranks, so that
// there are always two hosts).
func (c config) topoOf(n int) topology {
	t := c.topo
	t.ranks = n
	if n < 2*t.perHost {
		t.perHost = max(n/2, 1)
	}
	return t
}

// scenarios lists the faults of a run: fault types in round robin, then the
// clean controls (every other one a distractor), the two-fault runs and the
// weak faults, each with its own generator seed and a size from c.sizes in
// turn (c.topo.ranks when none).
func scenarios(c config) ([]Fault, []uint64, []topology) {
	var fs []Fault
	var seeds []uint64
	var topos []topology
	sizes := c.sizes
	if len(sizes) == 0 {
		sizes = []int{c.topo.ranks}
	}
	for i := range c.n + c.clean + c.double + c.weak {
		rng := rand.New(rand.NewPCG(c.seed, uint64(i)))
		t := c.topoOf(sizes[i%len(sizes)])
		var f Fault
		switch {
		case i < c.n:
			f = draw(faultTypes[i%len(faultTypes)], t, rng)
		case i < c.n+c.clean:
			ft := Clean
			if (i-c.n)%2 == 1 {
				ft = Distractor
			}
			f = draw(ft, t, rng)
		case i < c.n+c.clean+c.double:
			// the first fault: any type but a hang, which ends the run
			first := faultTypes[(i-c.n-c.clean)%len(faultTypes)]
			if first == Hang {
				first = SlowRank
			}
			f = addSecond(draw(first, t, rng), t, rng)
		default:
			f = weaken(draw(faultTypes[i%len(faultTypes)], t, rng), t, rng)
		}
		fs = append(fs, f)
		seeds = append(seeds, c.seed*1_000_003+uint64(i))
		topos = append(topos, t)
	}
	return fs, seeds, topos
}

func run(ctx context.Context, c config, log io.Writer, verbose, keep bool) (*results, *results, error) {
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		return nil, nil, err
	}
	fs, seeds, topos := scenarios(c)
	if len(c.only) > 0 {
		var f2 []Fault
		var s2 []uint64
		var t2 []topology
		for _, i := range c.only {
			if i >= 0 && i < len(fs) {
				f2, s2, t2 = append(f2, fs[i]), append(s2, seeds[i]), append(t2, topos[i])
			}
		}
		fs, seeds, topos = f2, s2, t2
	}
	outs := make([]outcome, len(fs))
	errs := make([]error, len(fs))
	// each scenario has its own store, so scenarios run in parallel; the
	// outcomes are added in scenario order so that the log reads the same
	// whatever the interleaving
	next := make(chan int)
	var wg sync.WaitGroup
	var done atomic.Int32
	for range max(1, min(c.workers, len(fs))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				outs[i], errs[i] = runScenario(ctx, set, topos[i], fs[i], seeds[i], keep)
				if n := done.Add(1); n%25 == 0 {
					fmt.Fprintf(log, "... %d/%d scenarios\n", n, len(fs))
				}
			}
		}()
	}
	for i := range fs {
		next <- i
	}
	close(next)
	wg.Wait()
	res, weak := newResults(), newResults()
	res.outs, weak.outs = nil, nil
	for i, o := range outs {
		if errs[i] != nil {
			return nil, nil, errs[i]
		}
		if o.f.Weak {
			weak.add(o)
			if verbose {
				fmt.Fprintf(log, "%3d weak %s\n", i, describe(o))
			}
			continue
		}
		res.add(o)
		if verbose || o.missed() || len(o.wrong) > 0 || !o.headline.right || (o.f.Also != nil && !o.both) {
			fmt.Fprintf(log, "%3d %s\n", i, describe(o))
		}
	}
	return res, weak, nil
}

// writeTable writes the per-type results as a markdown table.
func writeTable(w io.Writer, r *results) {
	fmt.Fprintln(w, "| fault type | scenarios | TP | FP | FN | precision | recall | F1 | localisation |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	row := func(name string, x tally) {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %.3f | %.3f | %.3f | %s |\n", name, x.scenarios, x.tp, x.fp, x.fn,
			x.precision(), x.recall(), x.f1(), loc(x))
	}
	for _, t := range faultTypes {
		row(string(t), *r.byType[t])
	}
	row("**overall**", r.overall())
	if r.cleanRuns > 0 {
		fmt.Fprintf(w, "\nClean controls: %d, flagged with a fault-type finding: %d.\n", r.cleanRuns, r.cleanFlagged)
	}
}

// loc is localisation accuracy: of the scenarios where the expected
// detector fired, the share where it named the injected place.
func loc(x tally) string {
	if x.fired == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", x.located, x.fired)
}
