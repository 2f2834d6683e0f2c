package detectors

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// A timed pass splits each detector's query into DuckDB's planning and
// the rest, as `analyze --timing` lists them, and finds what an untimed
// pass finds.
func TestTimedPassSplitsPlanning(t *testing.T) {
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	files := []string{corpus.Path(t, "kineto/hta/tests__data__trace_filter__sampled_rank-0.json.gz")}
	if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: "timed", Rank: -1}); err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetWindow(ctx, st, Window{}); err != nil {
		t.Fatal(err)
	}
	plain, err := set.Run(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	var whats []string
	set.Timed = func(what string, _ time.Duration) { whats = append(whats, what) }
	timed, err := set.Run(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	split := regexp.MustCompile(`^detector \w+ \(planning [0-9.]+[µmn]?s, executing [0-9.]+[µmn]?s\)$`)
	n := 0
	for _, w := range whats {
		if regexp.MustCompile(`^detector `).MatchString(w) {
			n++
			if !split.MatchString(w) {
				t.Errorf("%q: want the detector's planning and executing", w)
			}
		}
	}
	if n != len(set.Detectors) {
		t.Errorf("%d detectors timed of %d", n, len(set.Detectors))
	}
	var planned time.Duration
	for i, r := range timed {
		planned += r.Planning
		if r.Err != nil || plain[i].Err != nil {
			t.Errorf("%s: %v / %v", r.Detector.Name, r.Err, plain[i].Err)
			continue
		}
		if len(r.Rows) != len(plain[i].Rows) {
			t.Errorf("%s: %d rows timed, %d not", r.Detector.Name, len(r.Rows), len(plain[i].Rows))
		}
	}
	if planned <= 0 {
		t.Error("no planning time in any detector's profile")
	}
}
