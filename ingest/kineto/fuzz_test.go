package kineto

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/ingest/jsonscan"
)

// fuzzCorpus lists small real traces from the corpus (kineto/hta); seeds
// that are missing are left out, without skipping the fuzz target.
var fuzzCorpus = []string{
	"tests__data__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
	"tests__data__triton_example__triton_example.json.gz",
	"tests__data__call_stack__backward_thread.json",
	"tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
	"tests__data__execution_trace__benchmark_simple_add_et.json.gz",
}

const fuzzSeedBytes = 64 << 10

func corpusSeed(path string) ([]byte, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, false
		}
		data, err = io.ReadAll(io.LimitReader(zr, fuzzSeedBytes))
		if err != nil && len(data) == 0 {
			return nil, false
		}
	}
	if len(data) > fuzzSeedBytes {
		data = data[:fuzzSeedBytes]
	}
	return data, true
}

func FuzzKineto(f *testing.F) {
	for _, s := range []string{
		basicTrace,
		`{"traceEvents":[{"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)","pid":0,"tid":7,"ts":"1.5","dur":2,"args":{"correlation":1,"grid":[1,2,3],"Collective name":"all_reduce","Process Group Ranks":[0,1]}},` +
			`{"ph":"f","cat":"ac2g","id":1,"pid":0,"tid":7,"ts":1.5,"bp":"e"},{"ph":"B","name":"a\"b","pid":1,"tid":"T","ts":1},{"ph":"E","pid":1,"tid":"T","ts":0.5}],` +
			`"baseTimeNanoseconds":1767189312000000000,"distributedInfo":{"rank":1}}`,
		`[{"ph":"C","name":"c","ts":1e3,"args":{"v":1,"w":-2.5}},{"ph":"i","s":"t","name":"[memory]","ts":2,"args":{"Total Allocated":1,"Device Id":0}}]`,
		`[[1696966048083248105, 2, 1024, 3], [-1, 1, 512, 0]]`,
		`{"schema":"1.0.1","nodes":[{"id":1},{"id":2}]}`,
		`{"segments":[],"device_traces":[]}`,
		`{"traceEvents":[{"ph":"X","name" "a"}]}`,
		`{"traceEvents":[{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","ts":9223372036854775.807,"dur":-1e15}]}`,
		"",
		" ",
	} {
		f.Add([]byte(s))
	}
	f.Add(gz(f, []byte(basicTrace)))
	for _, name := range fuzzCorpus {
		rel := "kineto/hta/" + name
		if !corpus.Has(rel) {
			continue
		}
		if data, ok := corpusSeed(corpus.Path(f, rel)); ok {
			f.Add(data)
		}
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz.json"
		tr, err := Read(bytes.NewReader(data), name, Options{Rank: -1, NoPrefetch: true})
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FormatError: %v", err, err)
			}
			if fe.Path != name || !strings.HasPrefix(err.Error(), name+": ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			gzipped := len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b
			if fe.Offset < 0 || ((fe.Compressed || !gzipped) && fe.Offset > int64(len(data))) {
				t.Fatalf("offset %d outside the %d-byte input: %v", fe.Offset, len(data), err)
			}
		} else {
			s := tr.Slices
			if s.Len() > tr.Counts["events"] {
				t.Fatalf("%d slices from %d events", s.Len(), tr.Counts["events"])
			}
			for i, d := range s.Dur.V {
				if d < 0 {
					t.Fatalf("slice %d (%s) has dur %d", i, nameOf(tr, i), d)
				}
			}
			for _, c := range [][]int32{s.Kind.V, s.Cat.V, s.Name.V} {
				if len(c) != s.Len() {
					t.Fatalf("column of %d rows in a table of %d", len(c), s.Len())
				}
			}
			if s.Step.Len() != s.Len() || s.LaunchTS.Len() != s.Len() {
				t.Fatalf("step/launch columns have %d/%d rows; want %d", s.Step.Len(), s.LaunchTS.Len(), s.Len())
			}
		}

		// a plain input reads the same through a tiny window: every unit
		// then straddles refills
		if (len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b) || jsonscan.IsPickle(data, name) || len(data) == 0 {
			return
		}
		small, err2 := readWindow(data, name, 7)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("1 MiB window: %v; 7-byte window: %v", err, err2)
		}
		if err != nil {
			var a, b *FormatError
			errors.As(err, &a)
			errors.As(err2, &b)
			if a.Offset != b.Offset {
				t.Fatalf("error offsets differ: %v vs %v", err, err2)
			}
			return
		}
		if small.Slices.Len() != tr.Slices.Len() || small.Counters.Len() != tr.Counters.Len() ||
			small.Steps.Len() != tr.Steps.Len() || small.Counts["events"] != tr.Counts["events"] {
			t.Fatalf("tables differ: %v vs %v", tr.Counts, small.Counts)
		}

		// and the same read in two passes, in chunks of 3 rows
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if whole, err := ReadFile(path, Options{Rank: -1, NoPrefetch: true}); err == nil {
			sameInTwoPasses(t, path, whole, 3)
		}
	})
}
