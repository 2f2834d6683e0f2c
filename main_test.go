package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/sql/duck"
)

func trainscope(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// smallTrace is a valid one-rank trace with one step and one kernel.
const smallTrace = `{"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1700000000000000, "dur": 100},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1700000000000010, "dur": 5, "args": {"correlation": 7}},
 {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1700000000000020, "dur": 50, "args": {"correlation": 7, "stream": 7, "device": 0}}
]}`

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gz(data []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func TestAnalyzeAndSQL(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "rank-0.pt.trace.json", []byte(smallTrace))
	db := filepath.Join(t.TempDir(), "run.duckdb")
	code, out, errOut := trainscope(t, "analyze", dir, "--db", db, "--run", "r1", "--full")
	if code != 0 {
		t.Fatalf("analyze exit %d: %s", code, errOut)
	}
	for _, want := range []string{"## Verdict", "## Findings", "## Recommendations", "## Appendix", "### Metrics", "Run `r1`: 1 rank(s) (0)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if !strings.Contains(errOut, "[1/1]") || !strings.Contains(errOut, "database: "+db) {
		t.Errorf("progress/footer missing: %s", errOut)
	}
	code, out, errOut = trainscope(t, "sql", "--db", db, "--format", "json", "SELECT kind, count(*) AS n, sum(dur) AS d FROM slices GROUP BY kind ORDER BY kind")
	if code != 0 {
		t.Fatalf("sql exit %d: %s", code, errOut)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("sql json: %v\n%s", err, out)
	}
	want := map[string][2]float64{"annotation": {1, 100000}, "kernel": {1, 50000}, "runtime": {1, 5000}}
	if len(rows) != len(want) {
		t.Fatalf("rows = %v", rows)
	}
	for _, r := range rows {
		w := want[r["kind"].(string)]
		if r["n"].(float64) != w[0] || r["d"].(float64) != w[1] {
			t.Errorf("%v, want %v", r, w)
		}
	}
	code, out, _ = trainscope(t, "sql", "--db", db, "--format", "csv", "SELECT step, launch_ts - ts AS lag FROM slices WHERE kind = 'kernel'")
	if code != 0 || out != "step,lag\n1,-10000\n" {
		t.Errorf("csv = %q (exit %d)", out, code)
	}
	code, out, _ = trainscope(t, "sql", "--db", db, "SELECT count(*) AS n FROM findings WHERE detector = 'bottleneck_class'")
	if code != 0 || !strings.Contains(out, "n") || !strings.Contains(out, "(1 rows)") {
		t.Errorf("table = %q (exit %d)", out, code)
	}
	code, _, errOut = trainscope(t, "sql", "--db", db, "SELECT nope FROM slices")
	if code != 2 || !strings.Contains(errOut, "nope") {
		t.Errorf("bad query: exit %d, %s", code, errOut)
	}
	code, _, errOut = trainscope(t, "sql", "--db", db, "DELETE FROM slices")
	if code != 2 {
		t.Errorf("a write through the read-only sql command exited %d: %s", code, errOut)
	}
}

func TestAnalyzeJSONAndFilters(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.json", []byte(smallTrace))
	writeFile(t, dir, "b.json", []byte(strings.Replace(smallTrace, `"rank": 0`, `"rank": 1`, 1)))
	code, out, errOut := trainscope(t, "analyze", dir, "--format", "json", "--ranks", "1", "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if errOut != "" {
		t.Errorf("-q printed %q", errOut)
	}
	var rep struct {
		Runs []struct {
			Ranks []int `json:"ranks"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || len(rep.Runs[0].Ranks) != 1 || rep.Runs[0].Ranks[0] != 1 {
		t.Errorf("runs = %+v, want only rank 1", rep.Runs)
	}
}

func TestAnalyzeBadInput(t *testing.T) {
	dir := t.TempDir()
	valid := []byte(smallTrace)
	zipped := gz(valid)
	cases := []struct {
		name string
		file func() string
		want []string
	}{
		{"truncated gzip", func() string { return writeFile(t, dir, "cut.json.gz", zipped[:len(zipped)-20]) }, []string{"cut.json.gz", "compressed byte", "gzip"}},
		{"truncated json", func() string { return writeFile(t, dir, "cut.json", valid[:len(valid)/2]) }, []string{"cut.json", "byte", "unexpected end of file"}},
		{"empty file", func() string { return writeFile(t, dir, "empty.json", nil) }, []string{"empty.json", "empty file"}},
		{"pickle", func() string { return writeFile(t, dir, "snap.pickle", []byte{0x80, 0x04, 0x95}) }, []string{"snap.pickle", "pickle", "never deserialized"}},
		{"pickle bytes", func() string { return writeFile(t, dir, "snap.json", []byte{0x80, 0x04, 0x95, 0, 0}) }, []string{"snap.json", "pickle"}},
		{"not json", func() string { return writeFile(t, dir, "x.json", []byte("hello")) }, []string{"x.json", "byte 0", "expected a JSON object"}},
		{"empty folder", func() string { return t.TempDir() }, []string{"no traces in this folder"}},
		{"missing file", func() string { return filepath.Join(dir, "nope.json") }, []string{"nope.json", "no such file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := trainscope(t, "analyze", c.file(), "-q")
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, errOut)
			}
			if out != "" {
				t.Errorf("printed a report on error: %q", out)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nonsense"},
		{"analyze"},
		{"analyze", ".", "--format", "xml"},
		{"analyze", ".", "--steps", "7-3"},
		{"analyze", ".", "--ranks", "a"},
		{"analyze", ".", "--bogus"},
		{"analyze", ".", "--untraced-step", "-5ms"},
		{"analyze", ".", "--untraced-step", "fast"},
		{"sql", "SELECT 1"},
		{"export", "."},
		{"export", "--perfetto", "x.json"},
		{"export", "--perfetto", "x.json", "--db", "a.duckdb", "."},
	} {
		if code, _, errOut := trainscope(t, args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, code, errOut)
		}
	}
	for _, cmd := range []string{"analyze", "diff", "export", "profile", "report", "sql", "validate", "version"} {
		code, out, _ := trainscope(t, cmd, "--help")
		if code != 0 || !strings.Contains(out, "Usage: trainscope "+cmd) {
			t.Errorf("%s --help: exit %d, %q", cmd, code, out)
		}
	}
	if code, out, _ := trainscope(t, "help"); code != 0 || !strings.Contains(out, "analyze") {
		t.Errorf("help: %d %q", code, out)
	}
}

func TestValidate(t *testing.T) {
	code, out, errOut := trainscope(t, "validate")
	if code != 0 || !strings.Contains(out, "detectors ok") || !strings.Contains(out, "temporal_breakdown") {
		t.Fatalf("validate: exit %d %q %q", code, out, errOut)
	}
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", []byte("duckdb:\n  threads: -1\n  memroy_limit: 1GB\ndetectors:\n  thresholds:\n    gpu_idle:\n      max_idle: 0.5\nextra: 1\n"))
	code, _, errOut = trainscope(t, "validate", "--config", cfg)
	if code != 2 {
		t.Errorf("bad config: exit %d", code)
	}
	for _, want := range []string{"duckdb.memroy_limit: unknown key", "extra: unknown key", "duckdb.threads: -1, want 0"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// a user detector whose SQL names a missing column fails validation at its file and line
	det := filepath.Join(dir, "dets")
	os.Mkdir(det, 0o755)
	writeFile(t, det, "broken.sql", []byte("-- name: broken\n-- category: test\n-- kind: metric\n-- description: names a column that does not exist\nSELECT run_id, no_such_column FROM slices\n"))
	code, _, errOut = trainscope(t, "validate", "--detectors", det)
	if code != 2 || !strings.Contains(errOut, "broken.sql:5") || !strings.Contains(errOut, "no_such_column") {
		t.Errorf("broken detector: exit %d, %s", code, errOut)
	}
	// serve.auto_trigger's detectors are checked against the loaded set
	// here too, not only when serve starts
	trig := writeFile(t, dir, "trig.yaml", []byte("serve:\n  auto_trigger:\n    detectors: [gpu_clock_cap, gpu_clock_capp]\n"))
	if code, _, errOut = trainscope(t, "validate", "--config", trig); code != 2 || !strings.Contains(errOut, `"gpu_clock_capp" is not a finding detector`) || strings.Contains(errOut, `"gpu_clock_cap" is`) {
		t.Errorf("auto_trigger detectors: exit %d, %s", code, errOut)
	}
	t.Setenv("TRAINSCOPE_DUCKDB_THREADS", "-3")
	if code, _, errOut = trainscope(t, "validate"); code != 2 || !strings.Contains(errOut, "duckdb.threads: -3") {
		t.Errorf("env override: exit %d, %s", code, errOut)
	}
}

func TestAnalyzeSkipsNonTraceJSON(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "rank-0.json", []byte(smallTrace))
	writeFile(t, dir, "config.json", []byte(`{"lr": 0.1, "layers": [1, 2]}`))
	code, out, errOut := trainscope(t, "analyze", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "skipped") || !strings.Contains(errOut, "config.json: a JSON object without traceEvents") {
		t.Errorf("no skip notice: %s", errOut)
	}
	if !strings.Contains(out, "1 rank(s) (0)") {
		t.Errorf("report: %s", out[:200])
	}
	// alone, it is an error that says why
	code, _, errOut = trainscope(t, "analyze", filepath.Join(dir, "config.json"))
	if code != 2 || !strings.Contains(errOut, "nothing to analyze") || !strings.Contains(errOut, "without traceEvents") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// smallSnapshot has one 2 MiB segment: a live 1024-byte block (1000
// requested), a 512-byte block pending free and 2094616 free bytes, and
// an out-of-memory event.
const smallSnapshot = `{"segments": [{"device": 0, "address": 4096, "total_size": 2097152, "allocated_size": 1024,
 "active_size": 1536, "requested_size": 1000, "stream": 0, "segment_type": "small", "segment_pool_id": [0, 0], "is_expandable": false,
 "frames": [], "blocks": [
  {"address": 4096, "size": 1024, "requested_size": 1000, "state": "active_allocated", "frames": [{"filename": "train.py", "line": 7, "name": "step"}]},
  {"address": 5120, "size": 512, "requested_size": 512, "state": "active_pending_free"},
  {"address": 5632, "size": 2094616, "requested_size": 0, "state": "inactive"}]}],
 "device_traces": [[
  {"action": "alloc", "addr": 4096, "size": 1024, "stream": 0, "time_us": 1000, "frames": [{"filename": "train.py", "line": 7, "name": "step"}]},
  {"action": "oom", "device_free": 1048576, "size": 2147483648, "stream": 0, "time_us": 2000, "frames": []}]],
 "allocator_settings": {"expandable_segments": false}}`

func TestProfileMemory(t *testing.T) {
	dir := t.TempDir()
	snap := writeFile(t, dir, "rank-2.snapshot.json", []byte(smallSnapshot))
	code, out, errOut := trainscope(t, "profile", "--memory", snap, "--format", "json", "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Metrics []struct {
			Detector string   `json:"detector"`
			Columns  []string `json:"columns"`
			Rows     [][]any  `json:"rows"`
		} `json:"metrics"`
		Findings []struct {
			Detector string  `json:"detector"`
			Rank     int     `json:"rank"`
			Value    float64 `json:"value"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"reserved_bytes": 2097152, "allocated_bytes": 1024, "active_bytes": 1536, "unused_bytes": 2096128,
		"free_bytes": 2094616, "largest_free_bytes": 2094616, "fragmentation_pct": 0, "split_free_bytes": 2094616,
		"rounding_waste_bytes": 24, "segments": 1, "blocks": 3, "rank": 2}
	found := false
	for _, m := range rep.Metrics {
		if m.Detector != "mem_summary" {
			continue
		}
		found = true
		if len(m.Rows) != 1 {
			t.Fatalf("mem_summary rows %v", m.Rows)
		}
		for i, c := range m.Columns {
			if w, ok := want[c]; ok && m.Rows[0][i].(float64) != w {
				t.Errorf("mem_summary %s = %v, want %v", c, m.Rows[0][i], w)
			}
		}
	}
	if !found {
		t.Error("no mem_summary table")
	}
	oom := false
	for _, f := range rep.Findings {
		if f.Detector == "mem_oom" && f.Value == 1 && f.Rank == 2 {
			oom = true
		}
	}
	if !oom {
		t.Errorf("no mem_oom finding: %+v", rep.Findings)
	}

	// markdown: the summary line and the OOM finding
	code, out, _ = trainscope(t, "profile", "--memory", snap, "-q")
	if code != 0 || !strings.Contains(out, "memory, rank 2 device 0: 2.0 MiB reserved, 1.0 KiB allocated (100% of reserved unused)") ||
		!strings.Contains(out, "[critical] mem_oom") || !strings.Contains(out, "asked for 2.00 GiB with 0.00 GiB free") {
		t.Errorf("markdown report:\n%s", out)
	}
}

func TestProfileBadInput(t *testing.T) {
	dir := t.TempDir()
	trace := writeFile(t, dir, "t.json", []byte(smallTrace))
	pickle := writeFile(t, dir, "s.pickle", []byte{0x80, 0x04})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"profile", "--memory", trace}, "profiler trace, not a memory snapshot"},
		{[]string{"profile", "--memory", pickle}, "never deserialized"},
		{[]string{"profile", "--memory", filepath.Join(dir, "none.json")}, "no such file"},
		{[]string{"profile"}, "give --memory"},
		{[]string{"profile", trace}, "unexpected argument"},
	} {
		code, _, errOut := trainscope(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestProfileMagma27 checks the corpus snapshot's memory figures against
// numbers computed here from the raw JSON.
func TestProfileMagma27(t *testing.T) {
	path := corpus.Path(t, "memsnap/magma27_memory_snapshot.json.gz")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var snap struct {
		Segments []struct {
			TotalSize     int64 `json:"total_size"`
			AllocatedSize int64 `json:"allocated_size"`
			Blocks        []struct {
				Size  int64  `json:"size"`
				State string `json:"state"`
			} `json:"blocks"`
		} `json:"segments"`
	}
	if err := json.NewDecoder(zr).Decode(&snap); err != nil {
		t.Fatal(err)
	}
	var reserved, allocated, free, largest float64
	for _, s := range snap.Segments {
		reserved += float64(s.TotalSize)
		allocated += float64(s.AllocatedSize)
		for _, b := range s.Blocks {
			if b.State == "inactive" {
				free += float64(b.Size)
				largest = max(largest, float64(b.Size))
			}
		}
	}
	want := map[string]float64{"segments": 216, "reserved_bytes": reserved, "allocated_bytes": allocated,
		"free_bytes": free, "largest_free_bytes": largest, "fragmentation_pct": math.Round(1e4*100*(1-largest/free)) / 1e4}
	code, out, errOut := trainscope(t, "profile", "--memory", path, "--format", "json", "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Metrics []struct {
			Detector string   `json:"detector"`
			Columns  []string `json:"columns"`
			Rows     [][]any  `json:"rows"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, m := range rep.Metrics {
		if m.Detector != "mem_summary" || len(m.Rows) != 1 {
			continue
		}
		for i, c := range m.Columns {
			if w, ok := want[c]; ok {
				checked++
				if got := m.Rows[0][i].(float64); math.Abs(got-w) > 1e-3 {
					t.Errorf("%s = %v, want %v", c, got, w)
				}
			}
		}
	}
	if checked != len(want) {
		t.Errorf("checked %d of %d figures", checked, len(want))
	}
}

func TestAnalyzeTraceWithSnapshot(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "rank-0.pt.trace.json", []byte(smallTrace))
	writeFile(t, dir, "rank-0.snapshot.json", []byte(smallSnapshot))
	code, out, errOut := trainscope(t, "analyze", dir, "--full")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "rank-0.snapshot.json: memory_snapshot, rank 0") {
		t.Errorf("progress: %s", errOut)
	}
	for _, want := range []string{"Run `", "1 rank(s) (0)", "memory, rank 0 device 0: 2.0 MiB reserved", "#### GPU compute\n\n##### temporal_breakdown", "[CRITICAL] mem_oom", "[critical] mem_oom"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// a snapshot alone is a run of its own
	code, out, errOut = trainscope(t, "analyze", filepath.Join(dir, "rank-0.snapshot.json"), "-q")
	if code != 0 || !strings.Contains(out, "memory, rank 0 device 0") {
		t.Errorf("snapshot alone: exit %d %s\n%s", code, errOut, out)
	}
}

func TestDiffCommand(t *testing.T) {
	dir := t.TempDir()
	base := writeFile(t, dir, "base.json", []byte(smallTrace))
	slower := writeFile(t, dir, "new.json", []byte(strings.Replace(smallTrace, `"ts": 1700000000000020, "dur": 50`, `"ts": 1700000000000020, "dur": 80`, 1)))
	code, out, errOut := trainscope(t, "diff", base, slower, "--format", "json", "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Changes []struct {
			Name   string  `json:"name"`
			Change string  `json:"change"`
			Delta  float64 `json:"delta_ns_per_step"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Changes) != 1 || rep.Changes[0].Name != "gemm" || rep.Changes[0].Change != "slower" || rep.Changes[0].Delta != 30000 {
		t.Errorf("changes = %+v", rep.Changes)
	}
	if code, _, _ := trainscope(t, "diff", base); code != 2 {
		t.Errorf("one argument: exit %d", code)
	}
	if code, out, _ := trainscope(t, "diff", base, base, "-q"); code != 0 || !strings.Contains(out, "No kernel or operator changed") {
		t.Errorf("same run: exit %d %q", code, out)
	}
	code, out, errOut = trainscope(t, "diff", base, slower, "--format", "html", "-q")
	if code != 0 || !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, "<td><code>gemm</code></td>") {
		t.Errorf("html: exit %d %s %s", code, errOut, out)
	}
}

func TestAnalyzeStepsOutOfRange(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "rank-0.json", []byte(smallTrace))
	code, _, errOut := trainscope(t, "analyze", dir, "--steps", "5-9", "-q")
	if code != 2 || !strings.Contains(errOut, "--steps 5-9: no trace has those steps; they have steps 1") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if code, _, errOut := trainscope(t, "analyze", dir, "--steps", "1", "-q"); code != 0 {
		t.Errorf("--steps 1: exit %d %s", code, errOut)
	}
}

func TestReportFromDatabase(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "rank-0.json", []byte(smallTrace))
	db := filepath.Join(t.TempDir(), "r.duckdb")
	code, first, errOut := trainscope(t, "analyze", dir, "--db", db, "--run", "r", "-q")
	if code != 0 {
		t.Fatalf("analyze: %d %s", code, errOut)
	}
	code, again, errOut := trainscope(t, "report", "--db", db)
	if code != 0 || again != first || strings.Contains(errOut, "warning") {
		t.Errorf("report differs from analyze's (exit %d %s)", code, errOut)
	}
	// a threshold override through the config changes what is reported
	cfg := writeFile(t, dir, "c.yaml", []byte("detectors:\n  thresholds:\n    bottleneck_class:\n      min_kernels: 1\n"))
	code, tuned, _ := trainscope(t, "report", "--db", db, "--config", cfg)
	if code != 0 || tuned == first || !strings.Contains(tuned, "GPU-bound") {
		t.Errorf("report with min_kernels 1: exit %d\n%s", code, tuned)
	}
	if code, _, errOut := trainscope(t, "report", "--db", filepath.Join(dir, "none.duckdb")); code != 2 || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing db: exit %d %s", code, errOut)
	}
	// a database an older build wrote has no stacks or GPU busy times: say so
	st, err := duck.Open(context.Background(), db, duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Exec(context.Background(), "UPDATE slices_core SET gpu_busy_dur = NULL, stack_id = NULL"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if code, _, errOut := trainscope(t, "report", "--db", db); code != 0 || !strings.Contains(errOut, "written by an older trainscope") {
		t.Errorf("old database: exit %d, stderr %q", code, errOut)
	}
}

// export writes a Chrome trace of the analysed window, from traces or
// from a database analyze wrote, and says what it holds.
func TestExportCommand(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "rank-0.pt.trace.json", []byte(smallTrace))
	out := filepath.Join(t.TempDir(), "run.json")
	db := filepath.Join(t.TempDir(), "run.duckdb")
	if code, _, errOut := trainscope(t, "analyze", dir, "--db", db, "-q"); code != 0 {
		t.Fatalf("analyze: %d %s", code, errOut)
	}
	for _, args := range [][]string{{dir}, {"--db", db}} {
		code, _, errOut := trainscope(t, append([]string{"export", "--perfetto", out}, args...)...)
		if code != 0 || !strings.Contains(errOut, "perfetto: "+out+": ") {
			t.Fatalf("export %v: exit %d: %s", args, code, errOut)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			TraceEvents []map[string]any `json:"traceEvents"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("export %v is not JSON: %v", args, err)
		}
		names := map[string]bool{}
		for _, e := range doc.TraceEvents {
			if e["ph"] == "X" {
				names[e["name"].(string)] = true
			}
		}
		// the trace's only step is its last, which the window keeps when
		// it is the only one
		if !names["gemm"] || !names["cudaLaunchKernel"] {
			t.Errorf("export %v: slices %v, want the kernel and its launch", args, names)
		}
	}
}

// The command list names every command, its summaries in one column
// however long the longest name.
func TestUsageListsEveryCommandAligned(t *testing.T) {
	var b strings.Builder
	usage(&b)
	_, list, _ := strings.Cut(b.String(), "Commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	col := -1
	seen := 0
	for line := range strings.Lines(list) {
		name := strings.Fields(line)[0]
		if _, ok := commands[name]; !ok {
			t.Errorf("listed %q is no command", name)
		}
		seen++
		at := strings.Index(line, commands[name].summary)
		if col < 0 {
			col = at
		}
		if at != col || at <= len("  ")+len(name) {
			t.Errorf("%q's summary starts at column %d, the first one's at %d:\n%s", name, at, col, list)
		}
	}
	if seen != len(commands) {
		t.Errorf("%d commands listed, %d exist", seen, len(commands))
	}
}
