package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sameRead says how readFile and Sniff(path).Read differ on the file at
// path ("" when they agree): the same kind of result (a trace, a
// snapshot, a side file) or the same error.
func sameRead(path string, opt ReadOptions) string {
	ctx := context.Background()
	want, werr := Sniff(path).Read(ctx, path, opt)
	got, gerr := readFile(ctx, path, opt)
	if fmt.Sprint(werr) != fmt.Sprint(gerr) {
		return fmt.Sprintf("error %v, Sniff's reader: %v", gerr, werr)
	}
	if kind(got) != kind(want) {
		return fmt.Sprintf("read as %s, Sniff's reader: %s", kind(got), kind(want))
	}
	return ""
}

func kind(l *Loaded) string {
	switch {
	case l == nil:
		return "nothing"
	case l.Snapshot != nil:
		return "snapshot"
	case l.Side != nil:
		return "side file"
	}
	return fmt.Sprintf("%d traces", len(l.Traces))
}

func writeGzip(t testing.TB, dir, name string, data []byte) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// readFile, which reads a small gzip file as a trace before it sniffs its
// head for a memory snapshot, sends every file where Sniff does: snapshots
// with their keys in any order or escaped, traces that say "segments"
// below the top, files that are neither, and a snapshot refused by
// TracesOnly.
func TestReadFileAsSniff(t *testing.T) {
	dir := t.TempDir()
	trace := `{"traceEvents": [{"ph": "X", "name": "k", "cat": "kernel", "ts": 1, "dur": 2, "pid": 0, "tid": 7, "args": {"correlation": 1}}]`
	snap := `"segments": [], "device_traces": [[]]`
	cases := []string{
		`{` + snap + `}`,
		`{"device_traces": [[]], "segments": []}`,
		`{"allocator_settings": {"a": [1, {"b": "}"}]}, "segments": []}`,
		`{"segm\u0065nts": [], "x": 1}`,
		`{"\u0064evice_traces": [[]]}`,
		`{"segm\u0065nts": 1, "traceEvents": []}`,
		trace + `}`,
		trace + `, "segments": []}`,
		trace + `, "deviceProperties": [{"name": "segments"}]}`,
		trace + `, "x": "` + strings.Repeat("y", 2<<20) + `", "segments": []}`, // the key past the head
		`{"traceEvents": [{"name": "segments"}], "deviceProperties": []}`,
		`[{"segments": []}]`,
		`{"segments": [`,
		`{"baseTimeNanoseconds": "x", "segments": []}`,
		`{"distributedInfo": 5, "segments": []}`,
		`not json`,
		``,
	}
	for i, c := range cases {
		p := writeGzip(t, dir, fmt.Sprintf("f%d.json.gz", i), []byte(c))
		for _, tracesOnly := range []bool{false, true} {
			opt := ReadOptions{Options: Options{Rank: -1, TracesOnly: tracesOnly}}
			if d := sameRead(p, opt); d != "" {
				t.Errorf("%.80q (TracesOnly %v): %s", c, tracesOnly, d)
			}
		}
	}
	// a snapshot is still read as one, a trace as one
	snapPath := writeGzip(t, dir, "snap.json.gz", []byte(`{`+snap+`}`))
	if got, err := readFile(context.Background(), snapPath, ReadOptions{Options: Options{Rank: -1}}); err != nil || got.Snapshot == nil {
		t.Errorf("snapshot: %s, %v", kind(got), err)
	}
	tracePath := writeGzip(t, dir, "trace.json.gz", []byte(trace+`}`))
	if got, err := readFile(context.Background(), tracePath, ReadOptions{Options: Options{Rank: -1}}); err != nil || len(got.Traces) != 1 {
		t.Errorf("trace: %s, %v", kind(got), err)
	}
}

// FuzzReadFile: whatever a small gzip file holds, readFile reads it as
// Sniff(path).Read does (the same error, or the same kind of result).
func FuzzReadFile(f *testing.F) {
	for _, s := range []string{
		`{"segments": [], "device_traces": [[]]}`, `{"a": 1, "segments": 2}`, `{"segm\u0065nts": 1}`,
		`{"traceEvents": [], "segments": []}`, `{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1}]}`,
		`{"traceEvents": [{"name": "segments"}]}`, `[{"segments": []}]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := writeGzip(t, dir, "f.json.gz", data)
		if d := sameRead(p, ReadOptions{Options: Options{Rank: -1}}); d != "" {
			t.Fatalf("%q: %s", data, d)
		}
	})
}
