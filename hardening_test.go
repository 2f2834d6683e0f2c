package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// A kernel name and a thread name that are not UTF-8 (profilers copy C++
// names byte for byte) no longer end analyze with DuckDB's message and no
// file: the text is repaired with U+FFFD, a warning names the file (and,
// for trace names, the byte offset), and the report comes out. Through
// publish the server received a batch it could never store.
func TestAnalyzeRepairsInvalidUTF8(t *testing.T) {
	dir := t.TempDir()
	trace := strings.Replace(smallTrace, `"name": "gemm"`, "\"name\": \"gemm<\xff\xfe>\"", 1)
	trace = strings.Replace(trace, `"traceEvents": [`, "\"traceEvents\": [\n {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": \"main\xc3\"}},", 1)
	path := writeFile(t, dir, "rank-0.pt.trace.json", []byte(trace))
	code, out, errOut := trainscope(t, "analyze", "-q", "--run", "u", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !utf8.ValidString(out) || !strings.Contains(out, "gemm<\uFFFD>") {
		t.Errorf("the report lacks the repaired name:\n%s", head(out, 40))
	}
	for _, want := range []string{
		path + ": 1 distinct name(s) were not valid UTF-8; bad bytes replaced by U+FFFD (the first in the event ending at byte ",
		path + ": 1 threads.name value(s) were not valid UTF-8",
	} {
		if !strings.Contains(errOut, "trainscope: warning: "+want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// Times beyond what int64 arithmetic in a detector survives are refused at
// the reader with the file and offset, exit 2 (they failed in a detector
// that named no file, or wrapped negative).
func TestAnalyzeRefusesOverflowingTimes(t *testing.T) {
	dir := t.TempDir()
	trace := strings.Replace(smallTrace, `"ts": 1700000000000020, "dur": 50`, `"ts": 1700000000000020, "dur": 9000000000000000`, 1)
	path := writeFile(t, dir, "rank-0.pt.trace.json", []byte(trace))
	code, _, errOut := trainscope(t, "analyze", "-q", path)
	at := strings.Index(trace, `{"ph": "X", "cat": "kernel"`)
	if code != 2 || !strings.Contains(errOut, path+": byte "+strconv.Itoa(at)+": event \"gemm\": dur") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming %s at byte %d", code, errOut, filepath.Base(path), at)
	}
}
