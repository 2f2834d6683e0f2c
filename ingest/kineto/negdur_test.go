package kineto

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A negative duration (Kineto's clock skew: an 'X' event's dur, or an 'E'
// before its 'B') is kept at 0, as before, but no longer silently: a note
// says how many there were and where the first ends. Read whole or in
// two passes, the note is the same, and given once.
func TestNegativeDurationsNoted(t *testing.T) {
	first := `{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":2,"dur":-3}`
	doc := `{"traceEvents":[` +
		`{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":0,"tid":7,"ts":1,"dur":5},` +
		first + `,` +
		`{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":6,"dur":-0.5},` +
		`{"ph":"B","cat":"cpu_op","name":"b","pid":0,"tid":8,"ts":10},` +
		`{"ph":"E","pid":0,"tid":8,"ts":9},` +
		`{"ph":"X","cat":"kernel","name":"k3","pid":0,"tid":7,"ts":12,"dur":0}]}`
	firstEnd := strings.Index(doc, first) + len(first)
	want := "3 event(s) had a negative duration (clock skew in the profiler) and were kept with a duration of 0 (the first in the event ending at byte " + strconv.Itoa(firstEnd) + ")"
	tr := mustRead(t, "t.json", doc)
	if len(tr.Notes) != 1 || tr.Notes[0] != want {
		t.Errorf("notes %q, want %q", tr.Notes, want)
	}
	for _, name := range []string{"k1", "k2", "b", "k3"} {
		if d := tr.Slices.Dur.V[row(t, tr, name)]; d != 0 {
			t.Errorf("%s: dur %d, want 0", name, d)
		}
	}
	if d := tr.Slices.Dur.V[row(t, tr, "aten::mm")]; d != 5000 {
		t.Errorf("aten::mm: dur %d", d)
	}
	f := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	sameInTwoPasses(t, f, tr, 2)

	// none: no note
	ok := mustRead(t, "ok.json", strings.ReplaceAll(strings.ReplaceAll(doc, `"dur":-`, `"dur":`), `"ts":9}`, `"ts":11}`))
	if len(ok.Notes) != 0 {
		t.Errorf("notes %q for a trace without negative durations", ok.Notes)
	}
}
