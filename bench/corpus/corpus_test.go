package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The repository's copy is found from any folder below the root; a file
// stored gzipped comes back unpacked; a glob names each file once.
func TestFind(t *testing.T) {
	p := Path(t, "nsys/h100_2gpu_1s.sqlite")
	head := make([]byte, 16)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Read(head)
	f.Close()
	if string(head) != "SQLite format 3\x00" {
		t.Errorf("%s starts %q, not as an SQLite file", p, head)
	}
	if again := Path(t, "nsys/h100_2gpu_1s.sqlite"); again != p {
		t.Errorf("unpacked twice: %s, %s", p, again)
	}
	if p := Path(t, "kineto/hta/tests__data__trace_filter__sampled_rank-0.json.gz"); !strings.HasPrefix(p, Root()) {
		t.Errorf("a file the repository holds came from %s", p)
	}
	csvs := Glob(t, "ncu/*.csv")
	if len(csvs) != 4 {
		t.Errorf("ncu/*.csv: %d files, want 4 (two stored gzipped): %v", len(csvs), csvs)
	}
	traces := Glob(t, "kineto/*/*.json*")
	seen := map[string]bool{}
	for _, p := range traces {
		if seen[filepath.Base(p)] {
			t.Errorf("%s twice", p)
		}
		seen[filepath.Base(p)] = true
	}
	if len(traces) < 20 {
		t.Errorf("kineto/*/*.json*: only %d traces", len(traces))
	}
	if Has("kineto/none.json") {
		t.Error("Has says a file that is nowhere is there")
	}
}
