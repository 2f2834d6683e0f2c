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
	real     string // folder of real traces to scale, "" to skip
	realN    int
	workers  int
	seed     uint64
	topo     topology
}

func main() {
	var c config
	flag.IntVar(&c.n, "n", 200, "fault scenarios (spread evenly over the fault types)")
	flag.IntVar(&c.clean, "clean", 0, "clean controls (default max(20, n/8))")
	flag.IntVar(&c.weak, "weak", 0, "extra fault scenarios at strengths down to the thresholds, scored in a separate table")
	flag.StringVar(&c.real, "real", "bench/sample", "real traces to scale to -ranks for a clean control and slow-rank injections (\"\" skips)")
	flag.IntVar(&c.realN, "real-n", 8, "slow-rank injections into the scaled real traces")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of every random choice")
	flag.IntVar(&c.topo.ranks, "ranks", 16, "ranks per scenario")
	flag.IntVar(&c.topo.perHost, "per-host", 8, "ranks per host")
	flag.IntVar(&c.topo.tp, "tp", 4, "tensor-parallel group size (groups of consecutive ranks)")
	flag.IntVar(&c.topo.steps, "steps", 8, "profiler steps per trace (the last one is outside the analysis window)")
	flag.IntVar(&c.workers, "workers", runtime.NumCPU(), "scenarios analysed at once")
	out := flag.String("out", "", "write the markdown report here (e.g. bench/ACCURACY.md)")
	verbose := flag.Bool("v", false, "log every scenario")
	keep := flag.Bool("keep", false, "keep the generated traces (their folders are logged)")
	flag.Parse()
	if c.clean == 0 {
		c.clean = max(20, c.n/8)
	}
	if c.topo.ranks%c.topo.tp != 0 || c.topo.ranks < 2*c.topo.perHost || c.topo.steps < 4 {
		fmt.Fprintln(os.Stderr, "accuracy: need ranks divisible by tp, at least two hosts and four steps")
		os.Exit(2)
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
	if c.weak > 0 {
		fmt.Fprintln(&b, "\nWeak faults (strengths down to the thresholds):")
		fmt.Fprintln(&b)
		writeTable(&b, weak)
	}
	fmt.Print(b.String())
	fmt.Printf("\n%d scenarios in %s (%d CPUs)\n", res.faultRuns+res.cleanRuns+weak.faultRuns, wall.Round(time.Second), runtime.NumCPU())
	if *out != "" {
		if err := writeReport(*out, c, res, weak, rr, wall); err != nil {
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

// scenarios lists the faults of a run: fault types in round robin, then the
// clean controls, each with its own generator seed.
func scenarios(c config) ([]Fault, []uint64) {
	var fs []Fault
	var seeds []uint64
	for i := range c.n + c.clean + c.weak {
		rng := rand.New(rand.NewPCG(c.seed, uint64(i)))
		ft := Clean
		if i < c.n || i >= c.n+c.clean {
			ft = faultTypes[i%len(faultTypes)]
		}
		f := draw(ft, c.topo, rng)
		if i >= c.n+c.clean {
			f = weaken(f, c.topo, rng)
		}
		fs = append(fs, f)
		seeds = append(seeds, c.seed*1_000_003+uint64(i))
	}
	return fs, seeds
}

func run(ctx context.Context, c config, log io.Writer, verbose, keep bool) (*results, *results, error) {
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		return nil, nil, err
	}
	fs, seeds := scenarios(c)
	outs := make([]outcome, len(fs))
	errs := make([]error, len(fs))
	// each scenario has its own store, so scenarios run in parallel; the
	// outcomes are added in scenario order so that the log reads the same
	// whatever the interleaving
	next := make(chan int)
	var wg sync.WaitGroup
	var done atomic.Int32
	for range max(1, c.workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				outs[i], errs[i] = runScenario(ctx, set, c.topo, fs[i], seeds[i], keep)
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
		if verbose || (!o.hit && o.f.Type != Clean) || len(o.wrong) > 0 || !o.headline.right {
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
