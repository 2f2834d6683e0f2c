package nsys_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/ingest/nsys"
)

// wantFileError checks that err is an *nsys.FileError naming path and
// saying want.
func wantFileError(t *testing.T, err error, path, want string) *nsys.FileError {
	t.Helper()
	var fe *nsys.FileError
	if !errors.As(err, &fe) {
		t.Fatalf("%s: error %v (%T), want a *nsys.FileError", path, err, err)
	}
	if fe.Path != path || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %q, want the path and %q", path, err, want)
	}
	return fe
}

func TestNotAnExport(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	random := make([]byte, 1<<16)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	for _, c := range []struct {
		path, want string
	}{
		{write("trace.json", []byte(`{"traceEvents": []}`)), "not an SQLite database: expected an Nsight Systems SQLite export"},
		{write("empty.sqlite", nil), "empty file"},
		{write("random.sqlite", random), "not an SQLite database"},
		{write("header.sqlite", []byte("SQLite format 3\x00abc")), "truncated SQLite header"},
		{writeExport(t, filepath.Join(dir, "other.sqlite"), []string{`CREATE TABLE users (id INTEGER, name TEXT)`}),
			"not an Nsight Systems export with CUDA or NVTX trace (no StringIds, no CUPTI_ACTIVITY_KIND_* or NVTX_EVENTS table)"},
		{writeExport(t, filepath.Join(dir, "hostonly.sqlite"), schema[:2], schema[7:9]),
			"without GPU activity"},
		{writeExport(t, filepath.Join(dir, "nodevice.sqlite"), schema[:2],
			[]string{`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, "end" INTEGER, globalPid INTEGER)`}),
			"table CUPTI_ACTIVITY_KIND_KERNEL has no column deviceId"},
	} {
		_, err := nsys.ReadFile(c.path, nsys.Options{})
		wantFileError(t, err, c.path, c.want)
	}
	if nsys.IsSQLite(filepath.Join(dir, "random.sqlite")) || nsys.IsSQLite(filepath.Join(dir, "empty.sqlite")) ||
		nsys.IsSQLite(filepath.Join(dir, "missing.sqlite")) || !nsys.IsSQLite(filepath.Join(dir, "other.sqlite")) {
		t.Error("IsSQLite: only other.sqlite is SQLite")
	}
	if _, err := nsys.ReadFile(filepath.Join(dir, "missing.sqlite"), nsys.Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := nsys.ReadFile(dir, nsys.Options{}); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
}

// TestTruncatedAndCorrupt: a copy cut short, and one with garbage over
// its data pages, give a FileError, never a panic or a partial trace.
func TestTruncatedAndCorrupt(t *testing.T) {
	src := corpusFile(t, "h100_2gpu_1s.sqlite")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []int{len(b) / 2, 4096 + 100, len(b) - 1} {
		p := filepath.Join(dir, "cut.sqlite")
		if err := os.WriteFile(p, b[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		trs, err := nsys.ReadFile(p, nsys.Options{})
		if fe := wantFileError(t, err, p, "truncated SQLite file"); !fe.Truncated || trs != nil {
			t.Errorf("cut at %d: Truncated %v, %d traces", n, fe.Truncated, len(trs))
		}
	}
	// garbage over every page but the first (the schema root): the
	// tables are found, reading them fails
	rng := rand.New(rand.NewPCG(3, 4))
	for _, from := range []int{4096, len(b) / 2} {
		bad := append([]byte(nil), b...)
		for i := from; i < len(bad); i++ {
			bad[i] = byte(rng.UintN(256))
		}
		p := filepath.Join(dir, "corrupt.sqlite")
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		trs, err := nsys.ReadFile(p, nsys.Options{})
		if err == nil {
			t.Fatalf("garbage from byte %d: read %d traces without error", from, len(trs))
		}
		wantFileError(t, err, p, "")
		t.Logf("garbage from byte %d: %v", from, err)
	}
}
