package main

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/trainscope/trainscope/detectors"
)

// TestEachFaultIsFound runs one scenario per fault type and one clean
// control on a small run (8 ranks on 2 hosts), and checks that the
// expected detector names the injected place and that no other fault-type
// detector fires: a guard that the generator, the detectors and the
// scoring still agree.
func TestEachFaultIsFound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the detectors nine times")
	}
	topo := topology{ranks: 8, perHost: 4, tp: 2, steps: 6}
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		t.Fatal(err)
	}
	res := newResults()
	for i, ft := range append([]FaultType{Clean}, faultTypes...) {
		f := draw(ft, topo, rand.New(rand.NewPCG(7, uint64(i))))
		o, err := runScenario(context.Background(), set, topo, f, uint64(100+i), false)
		if err != nil {
			t.Fatal(err)
		}
		res.add(o)
		if ft != Clean && !o.hit {
			t.Errorf("%s not found: %s", ft, describe(o))
		}
		if len(o.wrong) > 0 {
			t.Errorf("%s: wrong findings: %s", ft, describe(o))
		}
	}
	if all := res.overall(); all.tp != len(faultTypes) || all.fp != 0 || res.cleanFlagged != 0 {
		t.Errorf("overall TP %d FP %d, clean flagged %d; want %d, 0, 0", all.tp, all.fp, res.cleanFlagged, len(faultTypes))
	}
}

// The scorer: a finding of the right detector on the wrong rank is both a
// false positive and a miss; another type's finding on a clean run is a
// false positive of that type.
func TestScoring(t *testing.T) {
	topo := topology{ranks: 8, perHost: 4, tp: 2, steps: 6}
	res := newResults()
	res.add(score(topo, Fault{Type: SlowRank, Rank: 3}, []finding{{detector: "slow_rank", rank: 5}, {detector: "gpu_idle", rank: 3}}))
	res.add(score(topo, Fault{Type: SlowLink, Group: 1}, []finding{{detector: "slow_link", rank: -1, subject: "tp [2, 3] allreduce"}}))
	res.add(score(topo, Fault{Type: Clean, Rank: 0}, []finding{{detector: "sync_api", rank: 0}}))
	sr, sl, sa := res.byType[SlowRank], res.byType[SlowLink], res.byType[SyncAPI]
	if sr.tp != 0 || sr.fp != 1 || sr.fn != 1 || sl.tp != 1 || sl.fp != 0 || sa.fp != 1 || res.cleanFlagged != 1 {
		t.Errorf("slow_rank %+v slow_link %+v sync_api %+v clean flagged %d", *sr, *sl, *sa, res.cleanFlagged)
	}
	if res.symptomsFault["gpu_idle"] != 1 {
		t.Errorf("gpu_idle symptom not tallied: %v", res.symptomsFault)
	}
}

// Two faults in a run are scored each under its own type, and a finding
// that matches either is no false positive; a distractor run is clean.
func TestScoringTwoFaults(t *testing.T) {
	topo := topology{ranks: 8, perHost: 4, tp: 2, steps: 6}
	res := newResults()
	second := Fault{Type: DataStall, Rank: 6}
	o := score(topo, Fault{Type: SlowRank, Rank: 3, Also: &second}, []finding{{detector: "slow_rank", rank: 3}, {detector: "sync_api", rank: 6}})
	res.add(o)
	res.add(score(topo, Fault{Type: Distractor, Rank: 0}, []finding{{detector: "slow_link", rank: -1, subject: "tp [0, 1] allreduce"}}))
	sr, ds, sa, sl := res.byType[SlowRank], res.byType[DataStall], res.byType[SyncAPI], res.byType[SlowLink]
	if sr.tp != 1 || ds.fn != 1 || ds.tp != 0 || sa.fp != 1 || sl.fp != 1 || res.cleanRuns != 1 || res.cleanFlagged != 1 {
		t.Errorf("slow_rank %+v data_stall %+v sync_api %+v slow_link %+v clean %d flagged %d", *sr, *ds, *sa, *sl, res.cleanRuns, res.cleanFlagged)
	}
	if !o.missed() {
		t.Error("a run whose second fault went unfound is not missed")
	}
}

// The harder scenarios, end to end on small runs: two faults on different
// ranks are both found and the causes name both; a distractor (every link
// slow alike) blames no rank, host or link.
func TestHarderScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the detectors four times")
	}
	topo := topology{ranks: 8, perHost: 4, tp: 2, steps: 6}
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range []Fault{
		addSecond(draw(SlowRank, topo, rand.New(rand.NewPCG(11, 1))), topo, rand.New(rand.NewPCG(11, 2))),
		addSecond(draw(DataStall, topo, rand.New(rand.NewPCG(12, 1))), topo, rand.New(rand.NewPCG(12, 2))),
		draw(Distractor, topo, rand.New(rand.NewPCG(13, 1))),
		draw(Distractor, topo, rand.New(rand.NewPCG(14, 1))),
	} {
		o, err := runScenario(context.Background(), set, topo, f, uint64(200+i), false)
		if err != nil {
			t.Fatal(err)
		}
		if o.missed() || len(o.wrong) > 0 || !o.headline.right || (f.Also != nil && !o.both) {
			t.Errorf("%s", describe(o))
		}
		if f.Type == Distractor && f.Comm < 2.5 {
			t.Errorf("distractor links x%.2f, want x2.5 or more", f.Comm)
		}
	}
}
