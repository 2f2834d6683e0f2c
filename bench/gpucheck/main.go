// Command gpucheck scores trainscope's verdicts on labelled single-GPU
// scenarios: the folder bench/gpu/scenarios.py writes on a real GPU (or
// -sim, bench/gpusim's simulated traces of the same scenarios, where no
// GPU is at hand). For each scenario it loads the traces as `trainscope
// analyze` does, runs every built-in detector, and checks that the
// report's verdict names the injected cause first; a memory snapshot's
// reserved and allocated totals must equal torch's own, and an ncu stdout
// capture must load with every profiled kernel. It prints a markdown table
// like bench/ACCURACY.md's and exits 1 when a scenario is missed.
//
//	go run -tags duckdb_arrow ./bench/gpucheck bench/gpu/run
//	go run -tags duckdb_arrow ./bench/gpucheck -sim -out /tmp/sim
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trainscope/trainscope/bench/gpusim"
	"github.com/trainscope/trainscope/detectors"
)

func main() {
	sim := flag.Bool("sim", false, "score bench/gpusim's simulated traces of the scenarios, written to -out (or a temporary folder)")
	out := flag.String("out", "", "with -sim: the folder to write the simulated scenarios to (kept)")
	strength := flag.Float64("strength", 1, "with -sim: the injected faults' strength (1 is scenarios.py's dose)")
	seed := flag.Uint64("seed", 1, "with -sim: the simulation's seed")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: gpucheck DIR | gpucheck -sim [-out DIR]\n\nScores the verdict on labelled single-GPU scenarios (bench/gpu/scenarios.py).\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	dir := flag.Arg(0)
	switch {
	case *sim && dir != "":
		fail(2, "give DIR or -sim, not both")
	case *sim:
		dir = *out
		if dir == "" {
			tmp, err := os.MkdirTemp("", "gpucheck-sim-")
			if err != nil {
				fail(1, err.Error())
			}
			defer os.RemoveAll(tmp)
			dir = tmp
		}
		if err := writeSim(dir, *strength, *seed); err != nil {
			fail(1, err.Error())
		}
	case dir == "":
		flag.Usage()
		os.Exit(2)
	}
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		fail(1, err.Error())
	}
	res, err := score(context.Background(), set, dir, os.Stderr)
	if err != nil {
		fail(1, err.Error())
	}
	res.write(os.Stdout)
	if res.missed() > 0 {
		os.Exit(1)
	}
}

// writeSim writes every simulated scenario and their labels.json to dir.
func writeSim(dir string, strength float64, seed uint64) error {
	l := Labels{GPU: "NVIDIA H200 (simulated by bench/gpusim)", Torch: "simulated", ProfiledSteps: 6}
	for i, sc := range gpusim.Scenarios {
		label, err := gpusim.Write(filepath.Join(dir, string(sc)), gpusim.Options{Scenario: sc, Seed: seed + uint64(i), Strength: strength})
		if err != nil {
			return err
		}
		l.Scenarios = append(l.Scenarios, Label{Name: label.Name, Dir: label.Dir, Cause: label.Cause, What: label.What, MS: label.MS})
	}
	return l.write(filepath.Join(dir, "labels.json"))
}

func fail(code int, msg string) {
	fmt.Fprintln(os.Stderr, "gpucheck:", msg)
	os.Exit(code)
}
