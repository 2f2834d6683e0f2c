package jsonscan

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// JSONSize reads a gzip file's trailer; JSONSizeAtLeast also takes a
// trailer too small for a trace (one that wrapped past 4 GiB) for 4x the
// compressed size.
func TestJSONSize(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) *os.File {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	var b strings.Builder
	b.WriteString(`{"traceEvents": [`)
	x := uint32(7)
	for i := range 2000 { // numbers that compress as a trace's do, not 250x
		x = x*1664525 + 1013904223
		fmt.Fprintf(&b, `{"ph": "X", "name": "k%d", "ts": %d, "dur": %d},`, x%97, i*1000+int(x%1000), x%5000)
	}
	b.WriteString(`{}]}`)
	doc := []byte(b.String())
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(doc)
	zw.Close()
	gz := z.Bytes()
	wrapped := append([]byte(nil), gz...)
	binary.LittleEndian.PutUint32(wrapped[len(wrapped)-4:], uint32(len(gz)+10)) // as a 4 GiB + len(doc) trailer might read
	for _, c := range []struct {
		name          string
		data          []byte
		size, atLeast int64
	}{
		{"plain.json", doc, int64(len(doc)), int64(len(doc))},
		{"trace.json.gz", gz, int64(len(doc)), int64(len(doc))},
		{"wrapped.json.gz", wrapped, int64(len(gz) + 10), int64(len(gz)) * minGzipRatio},
	} {
		f := write(c.name, c.data)
		if got := JSONSize(f, int64(len(c.data))); got != c.size {
			t.Errorf("%s: JSONSize %d, want %d", c.name, got, c.size)
		}
		if got := JSONSizeAtLeast(JSONSize(f, int64(len(c.data))), int64(len(c.data))); got != c.atLeast {
			t.Errorf("%s: JSONSizeAtLeast %d, want %d", c.name, got, c.atLeast)
		}
	}
}
