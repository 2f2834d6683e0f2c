package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trainscope/trainscope/bench/corpus"
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
	code, out, errOut := trainscope(t, "analyze", "-q", "--full", "--run", "u", path)
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

// The smaller holes a hostile but fair user found (issue 12, item 9).
func TestSmallerHoles(t *testing.T) {
	dir := t.TempDir()
	t.Run("a snapshot given as --trace", func(t *testing.T) {
		snap := corpus.Path(t, "memsnap/magma27_memory_snapshot.json.gz")
		code, _, errOut := trainscope(t, "profile", "-q", "--memory", snap, "--trace", snap)
		if code != 2 || !strings.Contains(errOut, "is a CUDA memory snapshot, not a trace: give it as --memory") {
			t.Errorf("exit %d: %s", code, errOut)
		}
	})
	t.Run("a run id too long to name a file", func(t *testing.T) {
		path := writeFile(t, dir, "rank-0.pt.trace.json", []byte(smallTrace))
		code, _, errOut := trainscope(t, "analyze", "-q", "--run", strings.Repeat("r", 300), path)
		if code != 2 || !strings.Contains(errOut, "run id of 300 bytes; at most 200") {
			t.Errorf("exit %d: %s", code, errOut)
		}
	})
	t.Run("a JSON or empty file given to audit", func(t *testing.T) {
		j := writeFile(t, dir, "config.json", []byte(`{"lr": 0.1, "layers": [1, 2]}`))
		e := writeFile(t, dir, "empty.sh", nil)
		code, _, errOut := trainscope(t, "audit", j, e)
		if code != 2 || !strings.Contains(errOut, "config.json: not a launch script") || !strings.Contains(errOut, "the file is JSON") ||
			!strings.Contains(errOut, "the file is empty") {
			t.Errorf("exit %d: %s", code, errOut)
		}
	})
	t.Run("a gzipped pickle", func(t *testing.T) {
		p := writeFile(t, dir, "snap.pickle.gz", gz([]byte("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94")))
		q := writeFile(t, dir, "snapshot.bin.gz", gz([]byte("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94")))
		for _, f := range []string{p, q} {
			code, _, errOut := trainscope(t, "profile", "-q", "--memory", f)
			if code != 2 || !strings.Contains(errOut, "pickle") || !strings.Contains(errOut, "json.dump") {
				t.Errorf("%s: exit %d: %s", filepath.Base(f), code, errOut)
			}
		}
	})
}
