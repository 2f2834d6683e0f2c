package ncu

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
)

func value(t *testing.T, e *Export, launch int64, name string) (float64, string) {
	t.Helper()
	for _, m := range e.Metrics {
		if m.Launch == launch && m.Name == name {
			if m.Value == nil {
				t.Fatalf("%s: %s has no number (%q)", e.Path, name, m.Text)
			}
			return *m.Value, m.Unit
		}
	}
	t.Fatalf("%s: launch %d has no %s", e.Path, launch, name)
	return 0, ""
}

func has(e *Export, name string) bool {
	for _, m := range e.Metrics {
		if m.Name == name {
			return true
		}
	}
	return false
}

func readCorpus(t *testing.T, name string) *Export {
	t.Helper()
	e, err := ReadFile(corpus.Path(t, "ncu/"+name))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The current layout (a bf16 cutlass GEMM, CC 12.0): units normalised,
// thousands separators read, n/a left out, rules kept with their speedup.
func TestCurrentLayout(t *testing.T) {
	e := readCorpus(t, "CodeGandee__llm-perf-opt__reports__20251107-dsocr__ncu-v2__kernel_0005_e67789a8b6cb9adf2cb8d4d3745a9a79__ncu.details.csv")
	if e.Layout != "details" || e.Kernels != 1 {
		t.Fatalf("layout %s, %d kernels", e.Layout, e.Kernels)
	}
	for _, c := range []struct {
		name, unit string
		want       float64
	}{
		{"Duration", "ns", 111810},               // 111.81 us
		{"dram__bytes_read.sum", "byte", 17.5e6}, // 17.50 Mbyte
		{"sm__ops_path_tensor_src_bf16_dst_fp32.sum", "", 12532580352},
		{"SM Frequency", "hz", 2.0e9},
		{"Elapsed Cycles", "cycle", 224652},
		{"Compute (SM) Throughput", "%", 32.10},
		{"Theoretical Occupancy", "%", 16.67},
	} {
		v, u := value(t, e, 0, c.name)
		if math.Abs(v-c.want) > 1e-6*math.Abs(c.want) || u != c.unit {
			t.Errorf("%s = %v %q, want %v %q", c.name, v, u, c.want, c.unit)
		}
	}
	if has(e, "flop_count_hp.sum") {
		t.Error("an n/a value was kept")
	}
	v, _ := value(t, e, 0, "rule:IssueSlotUtilization")
	if v != 67.9 {
		t.Errorf("IssueSlotUtilization speedup %v, want 67.9", v)
	}
	m := e.Metrics[0]
	if m.Block != [3]int32{256, 1, 1} || m.Grid != [3]int32{332, 1, 1} || m.CC != "12.0" || m.Stream != 7 || m.Device != 0 {
		t.Errorf("launch: %+v", m)
	}
	if len(e.Notes) != 0 {
		t.Errorf("notes on a complete export: %v", e.Notes)
	}
}

// The older layout (A100, BERT): a Kernel Time column, no Speed-of-Light
// section, metric rows shorter than the header, 26 launches.
func TestOlderLayout(t *testing.T) {
	e := readCorpus(t, "leleucas__Actual-Parameter-Collection-for-Machine-Learning-Operators__attention__actual_parameter_analysis__data__5-9__bert_torch_nsight.csv")
	if e.Layout != "details" || e.Kernels != 26 {
		t.Fatalf("layout %s, %d kernels", e.Layout, e.Kernels)
	}
	if v, u := value(t, e, 0, "sm__cycles_elapsed.avg.per_second"); math.Abs(v-967585940.83) > 1e-3 || u != "cycle/second" {
		t.Errorf("clock %v %q", v, u)
	}
	if v, _ := value(t, e, 0, "Registers Per Thread"); v != 47 && v != 48 {
		t.Errorf("registers %v", v)
	}
	if has(e, "Kernel Time") {
		t.Error("the Kernel Time column was read as a metric")
	}
	for _, n := range e.Notes {
		if strings.Contains(n, "Speed Of Light") {
			t.Errorf("raw throughput metrics stand in for the SOL section, but: %s", n)
		}
	}
}

// A --page raw export: one row per launch under a units row.
func TestRawLayout(t *testing.T) {
	e, err := ReadFile("testdata/raw.csv")
	if err != nil {
		t.Fatal(err)
	}
	if e.Layout != "raw" || e.Kernels != 2 {
		t.Fatalf("layout %s, %d kernels", e.Layout, e.Kernels)
	}
	for _, c := range []struct {
		launch     int64
		name, unit string
		want       float64
	}{
		{0, "dram__bytes_read.sum", "byte", 1024.5e6},
		{0, "gpu__time_duration.sum", "ns", 85250},
		{0, "launch__registers_per_thread", "register/thread", 232},
		{1, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%", 61.02},
	} {
		v, u := value(t, e, c.launch, c.name)
		if math.Abs(v-c.want) > 1e-6*c.want || u != c.unit {
			t.Errorf("%d %s = %v %q, want %v %q", c.launch, c.name, v, u, c.want, c.unit)
		}
	}
	for _, m := range e.Metrics {
		if m.Launch == 1 && (m.Name == "dram__bytes_read.sum" || m.Name == "sm__warps_active.avg.pct_of_peak_sustained_active") {
			t.Errorf("n/a kept: %+v", m)
		}
		if m.Launch == 1 && m.Grid != [3]int32{1024, 1, 1} {
			t.Errorf("a grid with a thousands separator (1,024, 1, 1) read as %v", m.Grid)
		}
	}
}

// Bad input: what is wrong is named with the file; what can be read is.
func TestBadExports(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ name, body, want string }{
		{"empty.csv", "", "empty file"},
		{"other.csv", "\"a\",\"b\"\n\"1\",\"2\"\n", `no "Kernel Name" column`},
		{"noid.csv", "\"Kernel Name\",\"Metric Name\",\"Metric Value\"\n\"k\",\"m\",\"1\"\n", `no "ID" column`},
		{"novalue.csv", "\"ID\",\"Kernel Name\",\"Metric Name\"\n\"0\",\"k\",\"m\"\n", `without a "Metric Value" column`},
		{"nolaunch.csv", "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Value\"\n", "no kernel launch"},
	} {
		_, err := ReadFile(write(c.name, c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: %v, want an error naming the file and %q", c.name, err, c.want)
		}
	}
	// an unknown version without Section Name and Metric Unit, a row with
	// a bad ID and a row cut short: the rest loads, each gap is a note
	e, err := ReadFile(write("partial.csv", "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Value\"\n"+
		"\"0\",\"gemm\",\"Duration\",\"12\"\n\"x\",\"gemm\",\"Duration\",\"12\"\n\"1\",\"gemm\",\"Duration\"\n\"1\",\"gemm\",\"Duration\",\"7\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Kernels != 2 {
		t.Errorf("%d kernels, want 2", e.Kernels)
	}
	notes := strings.Join(e.Notes, "\n")
	for _, want := range []string{"Section Name, Metric Unit", "2 row(s) could not be read", "line 3", "no GPU Speed Of Light Throughput section", "no Occupancy section"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if !IsExport("testdata/raw.csv") || IsExport(write("other2.csv", "\"a\",\"b\"\n")) {
		t.Error("IsExport")
	}
}

func FuzzNCU(f *testing.F) {
	if b, err := os.ReadFile("testdata/raw.csv"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\",\"Rule Type\",\"Rule Description\",\"Estimated Speedup\"\n" +
		"\"0\",\"k\",\"s\",\"Duration\",\"usecond\",\"1,234.5\"\n\"0\",\"k\",\"s\",\"\",\"\",\"\",\"R\",\"OPT\",\"hint\",\"12\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Read(strings.NewReader(string(b)), "fuzz.csv")
		if err != nil {
			return
		}
		if e.Kernels == 0 || len(e.Metrics) == 0 {
			t.Fatalf("no error and nothing read: %+v", e)
		}
		for _, m := range e.Metrics {
			if m.Kernel == "" || m.Name == "" {
				t.Fatalf("metric without a kernel or name: %+v", m)
			}
		}
	})
}
