package ingest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// How many files Read reads at once: one a core (or Workers) up to the
// number of files, fewer when that many traces would pass the memory
// budget, never none. A 192-core server is Workers 192 here.
func TestReaders(t *testing.T) {
	dir := t.TempDir()
	sized := func(name string, size int64) string { return sizedFile(t, dir, name, size) }
	var big []string
	for i := range 200 {
		big = append(big, sized(fmt.Sprintf("big-%03d.json", i), 100<<20))
	}
	// a .gz is measured by its trailer: 64 MB of JSON in a small file
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(make([]byte, 64<<20))
	w.Close()
	zipped := filepath.Join(dir, "z.json.gz")
	if err := os.WriteFile(zipped, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := traceMemory(zipped); got != (64<<20)*3/10 {
		t.Errorf("traceMemory of 64 MB gzipped: %d", got)
	}
	if got := traceMemory(sized("huge.json", 4<<30)); got != twoPassBytes*3/10 {
		t.Errorf("traceMemory of a 4 GB trace (read in chunks): %d, want %d", got, twoPassBytes*3/10)
	}
	per := int64(100<<20) * 3 / 10
	for _, c := range []struct {
		name    string
		files   int
		workers int
		budget  int64
		want    int
	}{
		{"one core", 200, 1, 0, 1},
		{"192 cores, 8 files", 8, 192, 0, 8},
		{"192 cores, 200 files, no budget", 200, 192, 0, 192},
		{"192 cores, a budget of 65 traces", 200, 192, 65 * per, 64},
		{"64 cores, room for all", 200, 64, 1000 * per, 64},
		{"a budget below one trace", 200, 16, per / 2, 1},
	} {
		if got := readers(big[:c.files], Options{Workers: c.workers, MemoryBudget: c.budget}); got != c.want {
			t.Errorf("%s: %d readers, want %d", c.name, got, c.want)
		}
	}
}

// sizedFile makes an empty file of size bytes (sparse) in dir.
func sizedFile(t *testing.T, dir, name string, size int64) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}
