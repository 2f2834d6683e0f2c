package kineto

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/ingest/timeline"
)

// BenchmarkRead measures the whole reader on the largest corpus trace
// (53.7 MB of JSON, 216K events): inflating on a second goroutine, and
// parsing from memory, which is the scanner alone. The trace is not in
// the repository: the benchmark needs a full corpus (TRAINSCOPE_CORPUS).
func BenchmarkRead(b *testing.B) {
	benchTrace := corpus.Path(b, "kineto/hta/tests__data__df_index_resolver__df_index_resolver.json.gz")
	b.Run("gzip-file", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tr, err := ReadFile(benchTrace, Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(tr.JSONBytes)
		}
	})
	raw := inflate(b, benchTrace)
	b.Run("json-in-memory", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := Read(bytes.NewReader(raw), "bench.json", Options{SizeHint: int64(len(raw))}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func inflate(b *testing.B, path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkReadShapes reads the bundled sample trace, recorded with
// record_shapes: its operators' Input Dims are parsed and costed (opCost).
func BenchmarkReadShapes(b *testing.B) {
	const trace = "../../bench/sample/rank-0.sampled.pt.trace.json.gz"
	if _, err := os.Stat(trace); err != nil {
		b.Skip(err)
	}
	raw := inflate(b, trace)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Read(bytes.NewReader(raw), "bench.json", Options{SizeHint: int64(len(raw))}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAccount is the step-time account (timeline.Account) of the
// bundled sample trace alone: each of r512's 512 files pays it once.
func BenchmarkAccount(b *testing.B) {
	const trace = "../../bench/sample/rank-0.sampled.pt.trace.json.gz"
	if _, err := os.Stat(trace); err != nil {
		b.Skip(err)
	}
	tr, err := ReadFile(trace, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		timeline.Account(tr.Slices, &tr.Steps)
	}
}
