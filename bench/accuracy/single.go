package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/trainscope/trainscope/bench/gpusim"
	"github.com/trainscope/trainscope/detectors"
)

// Single-GPU runs: bench/gpusim's scenarios of one rank (the shapes
// bench/gpu/scenarios.py writes on a real GPU), each fault at a random
// strength and, for the stall, in a random step (the first and last too),
// scored on whether the headline names the fault: the cause kind each
// scenario must produce.
var singleKinds = map[gpusim.Scenario]string{
	gpusim.Healthy:     "",
	gpusim.StallOnce:   "one_off_stall",
	gpusim.SlowInput:   "input_bound",
	gpusim.Sync:        "sync",
	gpusim.PageableH2D: "copies",
	gpusim.FP32:        "precision",
	gpusim.LaunchBound: "launch_bound",
}

// singleOutcome is one single-GPU run's headline against its fault.
type singleOutcome struct {
	scenario gpusim.Scenario
	desc     string
	claimed  string // the headline cause's kind, "" for none
	right    bool
	text     string
}

// runSingle generates n runs of each scenario (healthy included) and
// scores their headlines.
func runSingle(ctx context.Context, set *detectors.Set, n int, seed uint64, log io.Writer, keep bool) ([]singleOutcome, error) {
	var out []singleOutcome
	for i := range n * len(gpusim.Scenarios) {
		sc := gpusim.Scenarios[i%len(gpusim.Scenarios)]
		rng := rand.New(rand.NewPCG(seed, 0x5eed+uint64(i)))
		opt := gpusim.Options{Scenario: sc, Seed: seed*7919 + uint64(i), Strength: uniform(rng, 0.5, 1.5), Steps: 6}
		desc := fmt.Sprintf("%s at strength %.2f", sc, opt.Strength)
		if sc == gpusim.StallOnce {
			opt.StallStep = 1 + rng.IntN(opt.Steps)
			desc += fmt.Sprintf(" in recorded step %d of %d", opt.StallStep, opt.Steps)
		}
		dir, err := os.MkdirTemp("", "accuracy-single-")
		if err != nil {
			return nil, err
		}
		if _, err := gpusim.Write(filepath.Join(dir, string(sc)), opt); err != nil {
			return nil, err
		}
		_, causes, err := analyze(ctx, set, filepath.Join(dir, string(sc)))
		if keep {
			fmt.Fprintf(log, "%s: %s\n", dir, desc)
		} else {
			os.RemoveAll(dir)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", desc, err)
		}
		o := singleOutcome{scenario: sc, desc: desc, text: "no cause"}
		if len(causes) > 0 {
			o.claimed, o.text = causes[0].Kind, causes[0].Headline
		}
		o.right = o.claimed == singleKinds[sc]
		if !o.right {
			fmt.Fprintf(log, "single GPU: %s: headline wrong (claims %q: %s)\n", desc, o.claimed, o.text)
		}
		out = append(out, o)
	}
	return out, nil
}

func uniform(rng *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }

// writeSingle writes the single-GPU table.
func writeSingle(w io.Writer, outs []singleOutcome) {
	fmt.Fprintln(w, "| scenario | runs | headline right | recall | headlines claiming its cause | precision |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	claims := map[string]int{}
	claimsRight := map[string]int{}
	for _, o := range outs {
		claims[o.claimed]++
		if o.right {
			claimsRight[o.claimed]++
		}
	}
	for _, sc := range gpusim.Scenarios {
		var n, right int
		for _, o := range outs {
			if o.scenario == sc {
				n++
				if o.right {
					right++
				}
			}
		}
		if n == 0 {
			continue
		}
		kind := singleKinds[sc]
		prec := 1.0
		if claims[kind] > 0 {
			prec = float64(claimsRight[kind]) / float64(claims[kind])
		}
		fmt.Fprintf(w, "| %s (%s) | %d | %d | %.3f | %d | %.3f |\n", sc, orNone(kind), n, right, float64(right)/float64(n), claims[kind], prec)
	}
}

func orNone(s string) string {
	if s == "" {
		return "no cause"
	}
	return s
}
