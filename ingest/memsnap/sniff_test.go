package memsnap

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// FuzzSniffPrecheck: Sniff's quick refusal (mayHoldKey) never changes its
// answer: whatever it refuses, the full walk of the keys refuses too.
func FuzzSniffPrecheck(f *testing.F) {
	for _, s := range []string{
		`{"segments": []}`, `{"device_traces": []}`, `{"a": 1, "segments": 2}`,
		`{"segm\u0065nts": 1}`, `{"\u0064evice_traces": 1}`, `{"schemaVersion": 1, "traceEvents": [`,
		`{"a": "segments"}`, `["segments"]`, `{"a": {"segments": 1}}`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		if !mayHoldKey(head) && sniffKeys(head) {
			t.Fatalf("the precheck refuses %q, which the walk takes", head)
		}
	})
}

// TestSniffOnTraces: the heads of the repository's Kineto traces are
// refused, and the snapshots' heads taken, as before the precheck.
func TestSniffOnTraces(t *testing.T) {
	for _, glob := range []string{"../../bench/sample/*.json.gz", "../../testdata/*.json", "../../testdata/*/*.json*"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			head := b[:min(len(b), 64<<10)]
			plain := head
			if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
				zr, err := gzip.NewReader(bytes.NewReader(head))
				if err != nil {
					continue
				}
				var buf bytes.Buffer
				buf.ReadFrom(zr)
				plain = buf.Bytes()
			}
			if got, want := Sniff(head), sniffKeys(plain); got != want {
				t.Errorf("%s: Sniff %v, the walk of its keys %v", p, got, want)
			}
		}
	}
}

func BenchmarkSniffTrace(b *testing.B) {
	paths, _ := filepath.Glob("../../bench/sample/*.json.gz")
	if len(paths) == 0 {
		b.Skip("no bench/sample")
	}
	raw, err := os.ReadFile(paths[0])
	if err != nil {
		b.Fatal(err)
	}
	head := raw[:min(len(raw), 64<<10)]
	c := cpuNow()
	for b.Loop() {
		Sniff(head)
	}
	b.ReportMetric(float64(cpuNow()-c)/float64(b.N), "cpu-ns/op")
}

func BenchmarkSniffOld(b *testing.B) {
	paths, _ := filepath.Glob("../../bench/sample/*.json.gz")
	raw, _ := os.ReadFile(paths[0])
	head := raw[:min(len(raw), 64<<10)]
	c := cpuNow()
	for b.Loop() {
		zr, _ := gzip.NewReader(bytes.NewReader(head))
		var buf bytes.Buffer
		buf.ReadFrom(zr)
		sniffKeys(buf.Bytes())
	}
	b.ReportMetric(float64(cpuNow()-c)/float64(b.N), "cpu-ns/op")
}

// cpuNow is the process's user+system CPU time in ns (getrusage): the
// machine is shared, and CPU time moves less than wall time under load.
func cpuNow() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
