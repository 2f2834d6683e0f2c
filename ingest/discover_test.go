package ingest_test

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"github.com/trainscope/trainscope/ingest"
)

// LargestJSON reads a gzip file's size from its trailer, a plain file's
// from the file, and skips what cannot be opened.
func TestLargestJSON(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "a.json")
	if err := os.WriteFile(plain, bytes.Repeat([]byte(" "), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(bytes.Repeat([]byte("x"), 50000)) // compresses far below 1000 bytes
	zw.Close()
	packed := filepath.Join(dir, "b.json.gz")
	if err := os.WriteFile(packed, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none.json")
	for _, tc := range []struct {
		files []string
		want  int64
	}{
		{nil, 0},
		{[]string{plain}, 1000},
		{[]string{plain, packed}, min(50000, int64(buf.Len())*32)},
		{[]string{missing, plain}, 1000},
	} {
		if got := ingest.LargestJSON(tc.files); got != tc.want {
			t.Errorf("LargestJSON(%v) = %d, want %d", tc.files, got, tc.want)
		}
	}
}
