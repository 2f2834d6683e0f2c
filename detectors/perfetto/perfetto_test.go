package perfetto_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/internal/testkit"
	"github.com/trainscope/trainscope/detectors/perfetto"
	"github.com/trainscope/trainscope/ingest/kineto"
)

// chromeEvent is one event of an exported trace, as a viewer reads it.
type chromeEvent struct {
	Ph   string         `json:"ph"`
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Pid  int64          `json:"pid"`
	Tid  int64          `json:"tid"`
	TS   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	ID   int64          `json:"id"`
	BP   string         `json:"bp"`
	Args map[string]any `json:"args"`
}

// The Perfetto export of the hand run holds every slice of the window on
// aligned clocks, marks rank 1's late arrival at each step's all-reduce
// with an instant and a flow that ends inside rank 0's all-reduce where
// its wait ends, marks the root cause, and reads back through our own
// Kineto reader with the same slices.
func TestPerfettoExport(t *testing.T) {
	st, res := testkit.AnalyzeDir(t, testkit.HandRun(t), "hand", detectors.Window{}, testkit.LowThresholds)
	ctx := context.Background()
	rep, err := detectors.BuildReport(ctx, st, res)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	stats, err := perfetto.Write(ctx, st, rep, &buf, perfetto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []chromeEvent  `json:"traceEvents"`
		Trainscope  map[string]any `json:"trainscope"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("export is not JSON: %v", err)
	}
	// the window is steps 1-2 of both ranks: per rank and step 5 GPU
	// activities, 5 launch calls and the step annotation
	var slices []chromeEvent
	var instants, starts, finishes []chromeEvent
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "X":
			slices = append(slices, e)
		case "i":
			instants = append(instants, e)
		case "s":
			starts = append(starts, e)
		case "f":
			finishes = append(finishes, e)
		}
	}
	if len(slices) != 2*2*11 || stats.Events != len(slices) || stats.Ranks != 2 {
		t.Errorf("%d slices (stats %+v), want 44 from 2 ranks", len(slices), stats)
	}
	// aligned clocks: both ranks' all-reduces end together
	ends := map[int64][]float64{}
	for _, e := range slices {
		if e.Args["Collective name"] != nil {
			ends[e.Pid] = append(ends[e.Pid], e.TS+e.Dur)
		}
	}
	if len(ends[0]) != 2 || len(ends[1]) != 2 || ends[0][0] != ends[1][0] || ends[0][1] != ends[1][1] {
		t.Errorf("all-reduce ends per rank %v, want the same two on both", ends)
	}
	lateMarks := 0
	for _, e := range instants {
		if e.Pid == 1 && e.Args["held_up_ns"] == float64(100e3) {
			lateMarks++
		}
	}
	if lateMarks != 2 || stats.LateArrivals != 2 {
		t.Errorf("late-arrival instants on rank 1: %d (stats %d), want one per step; instants %+v", lateMarks, stats.LateArrivals, instants)
	}
	causeMarks := 0
	for _, e := range instants {
		if e.Args["headline"] != nil {
			causeMarks++
		}
	}
	if causeMarks != 1 {
		t.Errorf("%d root-cause markers, want 1", causeMarks)
	}
	// every flow starts inside a slice of its track and ends inside one:
	// rank 1's all-reduce at its arrival, rank 0's where its wait ends
	within := func(e chromeEvent) *chromeEvent {
		for i, s := range slices {
			if s.Pid == e.Pid && s.Tid == e.Tid && s.TS <= e.TS && e.TS <= s.TS+s.Dur {
				return &slices[i]
			}
		}
		return nil
	}
	if len(starts) != 2 || len(finishes) != 2 {
		t.Fatalf("%d flow starts and %d ends, want 2 each", len(starts), len(finishes))
	}
	for i := range starts {
		s, f := starts[i], finishes[i]
		if s.ID != f.ID || s.Pid != 1 || f.Pid != 0 || f.BP != "e" {
			t.Errorf("flow %+v -> %+v, want rank 1 -> rank 0 with one id", s, f)
		}
		from, to := within(s), within(f)
		if from == nil || to == nil || from.Args["Collective name"] == nil || to.Args["Collective name"] == nil {
			t.Errorf("flow %d does not join two collectives: from %+v to %+v", s.ID, from, to)
			continue
		}
		if f.TS-to.TS < 99.9 || f.TS-to.TS > 100 {
			t.Errorf("flow ends %.3f µs into rank 0's all-reduce, want at its 100 µs wait", f.TS-to.TS)
		}
	}
	if doc.Trainscope["run_id"] != "hand" {
		t.Errorf("trainscope metadata %v", doc.Trainscope)
	}

	// read back: the same slices, names and durations
	tr, err := kineto.Read(bytes.NewReader(buf.Bytes()), "export.json", kineto.Options{Rank: 0, NoPrefetch: true})
	if err != nil {
		t.Fatalf("our reader refuses the export: %v", err)
	}
	if n := tr.Slices.Len(); n != len(slices) {
		t.Errorf("read back %d slices, exported %d", n, len(slices))
	}
	var want, got []string
	for _, e := range slices {
		want = append(want, e.Name)
	}
	var wantDur, gotDur int64
	for _, e := range slices {
		wantDur += int64(e.Dur*1e3 + 0.5)
	}
	for i := range tr.Slices.Len() {
		got = append(got, tr.Str.Get(tr.Slices.Name.V[i]))
		gotDur += tr.Slices.Dur.V[i]
	}
	sort.Strings(want)
	sort.Strings(got)
	if len(want) != len(got) || wantDur != gotDur {
		t.Errorf("read back %d names, %d ns in all; exported %d, %d ns", len(got), gotDur, len(want), wantDur)
	}
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			t.Errorf("read back name %q, exported %q", got[i], want[i])
			break
		}
	}
	if tr.Counts["kind:comm"] != 4 {
		t.Errorf("read back %d communication kernels, want the 4 all-reduces", tr.Counts["kind:comm"])
	}
}
