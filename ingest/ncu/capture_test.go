package ncu

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
)

// captured is what `ncu --csv ... python train.py > k.csv` leaves in k.csv
// around the table: ncu's log lines, the program's own output, blank lines,
// and warnings between rows.
func captured(table string) string {
	lines := strings.SplitAfter(table, "\n")
	var b strings.Builder
	b.WriteString("==PROF== Connected to process 41237 (/usr/bin/python3.11)\n")
	b.WriteString("step 0: loss 10.3712\n")
	b.WriteString("==PROF== Profiling \"nvjet_tst_256x128_64x4_2x1_v_bz_coopB_TNT\" - 0: 0%....50%....100% - 38 passes\n")
	b.WriteString("==WARNING== Backing up device memory in system memory. Kernel replay might be slow. Consider using \"--replay-mode application\" to avoid memory save-and-restore.\n")
	b.WriteString("step 1: loss 9.8810\n\n")
	b.WriteString("==PROF== Disconnected from process 41237\n\n")
	for i, l := range lines {
		b.WriteString(l)
		if i == 2 {
			b.WriteString("==WARNING== Found outstanding GPU clock reset, trying to revert...\n\n")
		}
	}
	b.WriteString("\n\n")
	return b.String()
}

// An export captured from ncu's stdout reads as the clean export does, and
// says what it skipped; --page details and --page raw alike.
func TestCapturedStdout(t *testing.T) {
	for _, clean := range []string{
		corpus.Path(t, "ncu/CodeGandee__llm-perf-opt__reports__20251107-dsocr__ncu-v2__kernel_0005_e67789a8b6cb9adf2cb8d4d3745a9a79__ncu.details.csv"),
		"testdata/raw.csv",
	} {
		raw, err := os.ReadFile(clean)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "k.csv")
		if err := os.WriteFile(path, []byte(captured(string(raw))), 0o644); err != nil {
			t.Fatal(err)
		}
		if !IsExport(path) {
			t.Fatalf("%s: a captured stdout is not recognised as an export", clean)
		}
		want, err := ReadFile(clean)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(path)
		if err != nil {
			t.Fatalf("%s captured: %v", clean, err)
		}
		if got.Layout != want.Layout || got.Kernels != want.Kernels || !reflect.DeepEqual(got.Metrics, want.Metrics) {
			t.Errorf("%s captured: %s, %d kernels, %d metrics; clean: %s, %d, %d", clean, got.Layout, got.Kernels, len(got.Metrics), want.Layout, want.Kernels, len(want.Metrics))
		}
		notes := strings.Join(got.Notes, "\n")
		for _, w := range []string{"skipped 5 of ncu's own log line(s)", "and 5 blank line(s)", "the first warning: ==WARNING== Backing up device memory",
			"skipped 2 line(s) before the CSV header"} {
			if !strings.Contains(notes, w) {
				t.Errorf("%s captured: notes lack %q:\n%s", clean, w, notes)
			}
		}
		if len(got.Notes) != len(want.Notes)+2 || (len(want.Notes) > 0 && !reflect.DeepEqual(got.Notes[2:], want.Notes)) {
			t.Errorf("%s captured: the export's own notes changed: %q, want %q", clean, got.Notes[2:], want.Notes)
		}
	}
	// ncu ran and profiled nothing: say that, with its words
	path := filepath.Join(t.TempDir(), "none.csv")
	os.WriteFile(path, []byte("==PROF== Connected to process 7 (/usr/bin/python3)\n==ERROR== An error was reported by the driver\n==PROF== Disconnected from process 7\n==WARNING== No kernels were profiled.\n"), 0o644)
	if IsExport(path) {
		t.Error("a capture with no table is recognised as an export")
	}
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), "4 of ncu's log lines and no CSV table") || !strings.Contains(err.Error(), "==ERROR== An error was reported") {
		t.Errorf("no table: %v", err)
	}
	// a quoted field may span lines, and a line of it may look like a log
	// line: it is kept
	path = filepath.Join(t.TempDir(), "multi.csv")
	os.WriteFile(path, []byte("\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\",\"Rule Type\",\"Rule Description\"\n"+
		"\"0\",\"k\",\"s\",\"Duration\",\"usecond\",\"1.5\"\n\"0\",\"k\",\"s\",\"\",\"\",\"\",\"R\",\"OPT\",\"first line\n==NOTE== kept\n\nlast\"\n"), 0o644)
	e, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rule string
	for _, m := range e.Metrics {
		if m.Name == "rule:R" {
			rule = m.Text
		}
	}
	if !strings.Contains(rule, "first line\n==NOTE== kept\n\nlast") {
		t.Errorf("a rule's text across lines: %q", rule)
	}
}
