package ingest_test

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/ingest/kineto"
)

// corpusKineto is how many Kineto files (traces, memory timelines,
// execution traces: not SOURCE.txt) testdata/corpus/kineto holds; a full
// corpus adds those left out of the repository.
const corpusKineto = 24

// expectation is what an independent decode (encoding/json into generic
// values) says a corpus file holds.
type expectation struct {
	phases map[string]int // by ph
	cats   map[string]int // X events by cat
	steps  int            // distinct ProfilerStep#N on the host
	rank   *int
	base   int64
}

func decodeIndependently(t *testing.T, path string) (*expectation, bool) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil || doc["traceEvents"] == nil {
		return nil, false
	}
	var events []struct {
		Ph   string `json:"ph"`
		Cat  string `json:"cat"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(doc["traceEvents"], &events); err != nil {
		t.Fatal(err)
	}
	e := &expectation{phases: map[string]int{}, cats: map[string]int{}}
	stepRE := regexp.MustCompile(`^ProfilerStep#\d+$`)
	steps := map[string]bool{}
	for _, ev := range events {
		e.phases[ev.Ph]++
		if ev.Ph == "X" {
			e.cats[ev.Cat]++
			if ev.Cat == "user_annotation" && stepRE.MatchString(ev.Name) {
				steps[ev.Name] = true
			}
		}
	}
	e.steps = len(steps)
	if di, ok := doc["distributedInfo"]; ok {
		var d struct {
			Rank *int `json:"rank"`
		}
		json.Unmarshal(di, &d)
		e.rank = d.Rank
	}
	if b, ok := doc["baseTimeNanoseconds"]; ok {
		json.Unmarshal(b, &e.base)
	}
	return e, true
}

// kindsOfCat maps a Kineto category to the slice kinds it may become.
var kindsOfCat = map[string][]string{
	"kernel": {"kernel", "comm"}, "gpu_memcpy": {"memcpy"}, "gpu_memset": {"memset"},
	"cuda_runtime": {"runtime"}, "cuda_driver": {"driver"}, "cpu_op": {"cpu_op"},
	"python_function": {"python"}, "user_annotation": {"annotation"}, "gpu_user_annotation": {"gpu_annotation"},
	"cuda_sync": {"sync"}, "cuda_profiler_range": {"runtime"},
}

// TestEveryCorpusFileLoads reads every file under corpus/kineto and checks
// the reader's counts against an independent decode of the same file.
func TestEveryCorpusFileLoads(t *testing.T) {
	files := corpus.Glob(t, "kineto/*/*")
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".txt") || strings.HasSuffix(f, ".md") {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			tr, err := kineto.ReadFile(f, kineto.Options{Rank: -1})
			if err != nil {
				t.Fatalf("does not load: %v", err)
			}
			exp, ok := decodeIndependently(t, f)
			if !ok {
				// not a Chrome trace: the memory timeline and the execution trace
				switch tr.Format {
				case kineto.FormatMemoryTimeline:
					if tr.Counts["events"] == 0 || tr.Counters.Len() != tr.Counts["events"] {
						t.Errorf("memory timeline: %d entries, %d counters", tr.Counts["events"], tr.Counters.Len())
					}
				case kineto.FormatExecTrace:
					if tr.ETNodes == 0 {
						t.Error("execution trace with no nodes")
					}
				default:
					t.Errorf("format %s without traceEvents", tr.Format)
				}
				return
			}
			total := 0
			for ph, c := range exp.phases {
				total += c
				if got := tr.Counts[ph]; got != c {
					t.Errorf("ph %q: %d events, want %d", ph, got, c)
				}
			}
			if tr.Counts["events"] != total {
				t.Errorf("events = %d, want %d", tr.Counts["events"], total)
			}
			if tr.Slices.Len() != exp.phases["X"] {
				t.Errorf("slices = %d, want %d X events", tr.Slices.Len(), exp.phases["X"])
			}
			// every category's events land in the kinds it maps to
			byKind := map[string]int{}
			for k, v := range tr.Counts {
				if kind, ok := strings.CutPrefix(k, "kind:"); ok {
					byKind[kind] = v
				}
			}
			for cat, c := range exp.cats {
				kinds, ok := kindsOfCat[cat]
				if !ok {
					kinds = []string{"other"}
				}
				got := 0
				for _, k := range kinds {
					got += byKind[k]
				}
				if got < c {
					t.Errorf("cat %s: %d events, but kinds %v hold only %d", cat, c, kinds, got)
				}
			}
			cpuSteps := tr.Steps.Len()
			if exp.steps > 0 && cpuSteps != exp.steps {
				t.Errorf("steps = %d, want %d", cpuSteps, exp.steps)
			}
			if exp.rank != nil && (tr.Rank != int32(*exp.rank) || tr.RankSource != "distributedInfo") {
				t.Errorf("rank = %d (%s), want %d from distributedInfo", tr.Rank, tr.RankSource, *exp.rank)
			}
			if tr.BaseTimeNS != exp.base {
				t.Errorf("base = %d, want %d", tr.BaseTimeNS, exp.base)
			}
			if tr.Slices.Len() > 0 && (tr.StartNS < 1_500_000_000_000_000_000 || tr.EndNS < tr.StartNS) {
				t.Errorf("span %d..%d is not an epoch-ns range after 2017", tr.StartNS, tr.EndNS)
			}
			checkStacksAndBusy(t, tr)
		})
	}
	want := corpusKineto
	for _, rel := range corpus.LeftOut {
		if corpus.Has(rel) {
			want++
		}
	}
	if n < want {
		t.Errorf("only %d corpus files found, want %d", n, want)
	}
}

// Per-file facts checked once by hand with Python's json module: distinct
// host ProfilerStep#N names, kernel events split by NCCL name, and whether
// any event carries or implies a collective name.
func TestCorpusFacts(t *testing.T) {
	cases := []struct {
		file                    string
		rank                    int32
		rankSource              string
		steps, kernels, comm    int
		collectiveNamesNonEmpty bool
	}{
		{"hta/tests__data__nccl_parser_config__nccl_data.json.gz", 0, "distributedInfo", 3, 2679, 21, true},
		{"hta/tests__data__df_index_resolver__df_index_resolver.json.gz", 1, "distributedInfo", 5, 17350, 2020, true},
		{"hta/tests__data__distributed_info_unavailable__distributed_info_not_found.json.gz", 0, "default", 1, 0, 0, false},
		{"hta/tests__data__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", 34, "distributedInfo", 1, 0, 0, false},
		{"tracelens/tests__traces__mi300__resnet_act_checkpoint.json.gz", 0, "distributedInfo", 3, 2978, 17, true},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			path := corpus.Path(t, "kineto/"+c.file)
			tr, err := kineto.ReadFile(path, kineto.Options{Rank: -1})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Rank != c.rank || tr.RankSource != c.rankSource {
				t.Errorf("rank %d (%s), want %d (%s)", tr.Rank, tr.RankSource, c.rank, c.rankSource)
			}
			if tr.Steps.Len() != c.steps || tr.Counts["kind:kernel"] != c.kernels || tr.Counts["kind:comm"] != c.comm {
				t.Errorf("steps %d kernels %d comm %d, want %d %d %d", tr.Steps.Len(), tr.Counts["kind:kernel"], tr.Counts["kind:comm"], c.steps, c.kernels, c.comm)
			}
			// collective names on communication kernels (host operators
			// such as nccl:all_to_all carry names too, kernels or not)
			got := false
			for _, row := range tr.Slices.CollName.Rows {
				got = got || tr.Str.Get(tr.Slices.Kind.V[row]) == "comm"
			}
			if got != c.collectiveNamesNonEmpty {
				t.Errorf("collective names on kernels present = %v, want %v", got, c.collectiveNamesNonEmpty)
			}
		})
	}
}

// checkStacksAndBusy checks the derived host columns of a corpus trace:
// every host slice has a stack whose frame is its own name (step
// annotations as ProfilerStep#*), stack nodes form a tree, and its GPU
// busy time equals an independent computation (clip the GPU intervals to
// the slice, then take their union) on a sample of slices.
func checkStacksAndBusy(t *testing.T, tr *kineto.Trace) {
	t.Helper()
	s := tr.Slices
	host := map[string]bool{"runtime": true, "driver": true, "cpu_op": true, "python": true, "annotation": true}
	gpu := map[string]bool{"kernel": true, "comm": true, "memcpy": true, "memset": true}
	for id, n := range s.Stacks {
		if n.Parent >= int32(id) || n.Parent >= 0 && n.Depth != s.Stacks[n.Parent].Depth+1 || n.Parent < 0 && n.Depth != 0 {
			t.Fatalf("stack %d: parent %d, depth %d", id, n.Parent, n.Depth)
		}
	}
	type span struct{ s, e int64 }
	var gpuSpans []span
	var hostRows []int
	for i := range s.Len() {
		kind := tr.Str.Get(s.Kind.V[i])
		if gpu[kind] {
			gpuSpans = append(gpuSpans, span{s.TS.V[i], s.TS.V[i] + s.Dur.V[i]})
		}
		if host[kind] != s.StackID.Valid(i) || host[kind] != s.GPUBusyDur.Valid(i) {
			t.Fatalf("row %d (%s): stack valid %v, busy valid %v", i, kind, s.StackID.Valid(i), s.GPUBusyDur.Valid(i))
		}
		if !host[kind] {
			continue
		}
		hostRows = append(hostRows, i)
		name, frame := tr.Str.Get(s.Name.V[i]), tr.Str.Get(s.Stacks[s.StackID.V[i]].Name)
		if frame != name && !(strings.HasPrefix(name, "ProfilerStep#") && frame == "ProfilerStep#*") {
			t.Fatalf("row %d: name %q, stack frame %q", i, name, frame)
		}
	}
	step := max(1, len(hostRows)/300)
	for k := 0; k < len(hostRows); k += step {
		i := hostRows[k]
		lo, hi := s.TS.V[i], s.TS.V[i]+s.Dur.V[i]
		var clipped []span
		for _, g := range gpuSpans {
			if a, b := max(g.s, lo), min(g.e, hi); a < b {
				clipped = append(clipped, span{a, b})
			}
		}
		slices.SortFunc(clipped, func(x, y span) int { return cmp.Compare(x.s, y.s) })
		var want, end int64 = 0, math.MinInt64
		for _, c := range clipped {
			if c.s > end {
				want += c.e - c.s
				end = c.e
			} else if c.e > end {
				want += c.e - end
				end = c.e
			}
		}
		if got := s.GPUBusyDur.V[i]; got != want {
			t.Fatalf("row %d (%s, %d..%d): gpu_busy_dur %d, want %d", i, tr.Str.Get(s.Name.V[i]), lo, hi, got, want)
		}
	}
}
