package main

import (
	"strconv"
	"strings"
	"testing"
)

// A snapshot with a negative size, or one beyond int64, is refused: exit
// 2, naming the file and the offset of the value (it was read as "-5 B
// allocated", or saturated into a detector's overflow, with exit 0).
func TestProfileRefusesCorruptSizes(t *testing.T) {
	dir := t.TempDir()
	for name, value := range map[string]string{"negative.json": "-5", "huge.json": "1e30", "above-int64.json": "99999999999999999999"} {
		doc := strings.Replace(smallSnapshot, `"size": 512,`, `"size": `+value+`,`, 1) // smallSnapshot: main_test.go
		path := writeFile(t, dir, name, []byte(doc))
		at := strings.Index(doc, `"size": `+value) + len(`"size": `)
		code, _, errOut := trainscope(t, "profile", "-q", "--memory", path)
		if want := path + ": byte " + strconv.Itoa(at) + ": block size " + value + " is not a size in bytes"; code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", name, code, errOut, want)
		}
	}
	path := writeFile(t, dir, "ok.json", []byte(smallSnapshot))
	if code, _, errOut := trainscope(t, "profile", "-q", "--memory", path); code != 0 {
		t.Errorf("a sound snapshot: exit %d: %s", code, errOut)
	}
}

// A trace's negative durations (Kineto's clock skew) load at 0 with a
// warning naming the file, how many and where the first is.
func TestAnalyzeWarnsOfNegativeDurations(t *testing.T) {
	dir := t.TempDir()
	trace := strings.Replace(smallTrace, `"dur": 50`, `"dur": -50`, 1)
	path := writeFile(t, dir, "rank-0.pt.trace.json", []byte(trace))
	code, _, errOut := trainscope(t, "analyze", "-q", "--run", "neg", path)
	end := strings.Index(trace, `"dur": -50`)
	end += strings.Index(trace[end:], "}}") + 2
	want := "trainscope: warning: " + path + ": 1 event(s) had a negative duration (clock skew in the profiler) and were kept with a duration of 0 (the first in the event ending at byte " + strconv.Itoa(end) + ")"
	if code != 0 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q; want exit 0 and %q", code, errOut, want)
	}
}
