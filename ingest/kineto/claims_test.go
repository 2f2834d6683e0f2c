package kineto

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/ingest/jsonscan"
)

// allocated is what f allocated on the Go heap, in bytes.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A tiny valid gzip file's trailer (18 bytes uncompressed, less than the
// file) was read as "4 GiB more" and sized the tables: 761 MB for a 38-byte
// file, 4.7 GB for eight of them. Sizes a file claims are bounded by what
// it could hold.
func TestReadFileDoesNotTrustTheGzipTrailer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.json.gz")
	data := gz(t, []byte(`{"traceEvents":[]}`))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	hint := jsonscan.JSONSize(f, int64(len(data)))
	f.Close()
	if hint > int64(len(data))*32 {
		t.Errorf("size hint %d for a %d-byte file", hint, len(data))
	}
	n := allocated(func() {
		if _, err := ReadFile(path, Options{Rank: -1}); err != nil {
			t.Fatal(err)
		}
	})
	if n > 16<<20 {
		t.Errorf("reading a %d-byte trace allocated %d MB", len(data), n>>20)
	}
}

// A name longer than MaxNameBytes is cut, with a note; reading it costs
// memory in proportion to the file, not a multiple of the name per table.
func TestReadCutsLongNames(t *testing.T) {
	long := strings.Repeat("x", 3*MaxNameBytes+7) + "é"
	doc := `{"traceEvents":[{"ph":"X","cat":"kernel","name":"` + long + `","pid":0,"tid":7,"ts":1,"dur":2}]}`
	var tr *Trace
	n := allocated(func() { tr = mustRead(t, "long.json", doc) })
	name := nameOf(tr, 0)
	if len(name) > MaxNameBytes+64 || !strings.HasPrefix(name, strings.Repeat("x", 100)) || !strings.HasSuffix(name, "more bytes cut]") {
		t.Errorf("name of %d bytes: ...%q", len(name), name[max(0, len(name)-40):])
	}
	if len(tr.Notes) != 1 || !strings.Contains(tr.Notes[0], "1 distinct name(s) were longer than 64 KiB") {
		t.Errorf("notes %q", tr.Notes)
	}
	if n > 40*uint64(len(doc))+8<<20 {
		t.Errorf("reading a %d-byte trace allocated %d MB", len(doc), n>>20)
	}
}

// One unit larger than jsonscan.MaxUnitBytes is refused with its offset
// instead of growing the window without bound.
func TestReadRefusesAGiantEvent(t *testing.T) {
	defer func(old int) { jsonscan.MaxUnitBytes = old }(jsonscan.MaxUnitBytes)
	jsonscan.MaxUnitBytes = 1 << 20
	ok := `{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2}`
	doc := `{"traceEvents":[` + ok + `,{"ph":"X","cat":"kernel","name":"` + strings.Repeat("y", 3<<20) + `","pid":0,"tid":7,"ts":1,"dur":2}]}`
	p := newParser(bytes.NewReader([]byte(doc)), "giant.json", Options{Rank: -1})
	p.s = jsonscan.NewStream(bytes.NewReader([]byte(doc)), 64<<10)
	err := p.run()
	if err == nil || !strings.Contains(err.Error(), "longer than 1 MiB") || !strings.Contains(err.Error(), "giant.json") {
		t.Fatalf("%v", err)
	}
}
