package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trainscope/trainscope/detectors"
)

// The real-trace check scales the real ranks of a folder (bench/sample) to
// N ranks on hosts, as bench/scale does, and injects only what can be
// injected into a real trace without ambiguity: one rank's compute kernels
// k times longer. It shows what the scored detectors say about real event
// mixes, which the generator cannot: the clean scaled run is not clean for
// every detector (the sample holds real pageable copies).

// loadBase decodes every trace of dir into a generic document.
func loadBase(dir string) ([]map[string]any, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json*"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("%s: no traces (%v)", dir, err)
	}
	sort.Strings(paths)
	var docs []map[string]any
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		var r io.Reader = f
		if strings.HasSuffix(p, ".gz") {
			zr, err := gzip.NewReader(f)
			if err != nil {
				f.Close()
				return nil, err
			}
			r = zr
		}
		var doc map[string]any
		err = json.NewDecoder(r).Decode(&doc)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		docs = append(docs, doc)
	}
	return docs, nil
}

// writeScaled writes t.ranks copies of the base traces (rank r copies base
// r mod len(bases)) with rank and world size rewritten, named so that the
// loader puts perHost ranks on each host; slowRank's compute kernels (not
// NCCL) last factor times longer. Stretching a kernel in place can overlap
// the next one on its stream, which the detectors tolerate.
func writeScaled(dir string, bases []map[string]any, t topology, slowRank int, factor float64) error {
	for r := range t.ranks {
		base := bases[r%len(bases)]
		doc := map[string]any{}
		for k, v := range base {
			doc[k] = v
		}
		di := map[string]any{}
		if old, ok := base["distributedInfo"].(map[string]any); ok {
			for k, v := range old {
				di[k] = v
			}
		}
		di["rank"], di["world_size"] = r, t.ranks
		doc["distributedInfo"] = di
		if r == slowRank {
			evs := base["traceEvents"].([]any)
			out := make([]any, len(evs))
			for i, e := range evs {
				out[i] = e
				ev, ok := e.(map[string]any)
				name, _ := ev["name"].(string)
				if ok && ev["cat"] == "kernel" && !strings.HasPrefix(strings.ToLower(name), "nccl") {
					cp := map[string]any{}
					for k, v := range ev {
						cp[k] = v
					}
					cp["dur"] = ev["dur"].(float64) * factor
					out[i] = cp
				}
			}
			doc["traceEvents"] = out
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%s_%d.%d.pt.trace.json", hostName(r/t.perHost), 2000+r, int64(1_700_000_000_000)+int64(r))
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// runReal analyses one clean scaled run and n slow-rank injections into
// it; it returns the clean run's fault-type findings and the outcomes.
func runReal(ctx context.Context, set *detectors.Set, base string, t topology, n int, seed uint64) ([]finding, *results, error) {
	bases, err := loadBase(base)
	if err != nil {
		return nil, nil, err
	}
	res := newResults()
	var clean []finding
	for i := range n + 1 {
		rng := rand.New(rand.NewPCG(seed, 1<<20+uint64(i)))
		f := Fault{Type: Clean, Rank: -1}
		if i > 0 {
			f = Fault{Type: SlowRank, Rank: rng.IntN(t.ranks), Factor: 1.3 + 1.7*rng.Float64(), Step: 1}
		}
		dir, err := os.MkdirTemp("", "accuracy-real-*")
		if err != nil {
			return nil, nil, err
		}
		err = writeScaled(dir, bases, t, f.Rank, f.Factor)
		var fds []finding
		if err == nil {
			fds, _, err = analyze(ctx, set, dir)
		}
		os.RemoveAll(dir)
		if err != nil {
			return nil, nil, err
		}
		if i == 0 {
			for _, fd := range fds {
				if scored(fd.detector) {
					clean = append(clean, fd)
				}
			}
			continue
		}
		// findings the clean scaled run has too are the base traces' own
		// (real pageable copies), not the injection's doing
		var fresh []finding
		for _, fd := range fds {
			if !containsFinding(clean, fd) {
				fresh = append(fresh, fd)
			}
		}
		res.add(score(t, f, fresh))
	}
	return clean, res, nil
}

func containsFinding(list []finding, fd finding) bool {
	for _, x := range list {
		if x.detector == fd.detector && x.rank == fd.rank && x.host == fd.host && x.subject == fd.subject {
			return true
		}
	}
	return false
}
