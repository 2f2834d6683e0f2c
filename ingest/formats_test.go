package ingest

import (
	"compress/gzip"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
)

// Every real artifact in the corpus is sniffed as its format, and the
// look-alikes in it (a CSV that is not an ncu export, SQL text beside the
// SQLite exports) are not taken for one: they fall to the Kineto reader,
// whose error names the file and the byte where it differs from a trace.
func TestSniffCorpus(t *testing.T) {
	var scripts []string
	filepath.WalkDir(corpus.Dir(t, "scripts"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".sh") {
			scripts = append(scripts, path)
		}
		return nil
	})
	cases := []struct {
		want  string
		files []string
	}{
		{"kineto", append(append(corpus.Glob(t, "kineto/*/*.json"), corpus.Glob(t, "kineto/*/*.json.gz")...), corpus.Glob(t, "kineto/*/*.raw.gz")...)},
		{"memory_snapshot", corpus.Glob(t, "memsnap/*.json.gz")},
		{"nsys_sqlite", corpus.Glob(t, "nsys/*.sqlite")},
		{"ncu_csv", corpus.Glob(t, "ncu/*.csv")},
		{"dcgm_scrape", corpus.Glob(t, "dcgm/*.prom")},
		{"launch_script", scripts},
	}
	for _, c := range cases {
		if len(c.files) == 0 {
			t.Errorf("%s: no corpus files", c.want)
		}
		for _, f := range c.files {
			if got := Sniff(f).Name(); got != c.want {
				t.Errorf("%s: sniffed as %s, want %s", f, got, c.want)
			}
		}
	}
	// look-alikes: dcgm-exporter's field lists are CSV, schema.sql is the
	// text of an nsys schema
	lookalikes := append(corpus.Glob(t, "dcgm/*.csv"), corpus.Path(t, "nsys/schema.sql"))
	for _, f := range lookalikes {
		r := Sniff(f)
		if r.Name() != "kineto" {
			t.Errorf("%s: sniffed as %s, want kineto (the reader of last resort)", f, r.Name())
			continue
		}
		_, err := r.Read(context.Background(), f, ReadOptions{Options: Options{Rank: -1}})
		if err == nil || !strings.Contains(err.Error(), f) || !strings.Contains(err.Error(), "byte ") {
			t.Errorf("%s: read as a trace: %v, want an error naming the file and a byte offset", f, err)
		}
	}
}

// Sniffing decides by the head: a snapshot is known by its top-level keys,
// plain or gzip; a trace that says "segments" below the top is still a
// trace; an SQLite file is one whatever its name; a file that
// cannot be read is left to the reader its name picks, which says why.
func TestSniffHeads(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte, gz bool) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if gz {
			zw := gzip.NewWriter(f)
			zw.Write(data)
			zw.Close()
		} else {
			f.Write(data)
		}
		f.Close()
		return p
	}
	cases := []struct {
		path, want string
	}{
		{write("snap.json", []byte(`{"segments": [], "device_traces": [[]]}`), false), "memory_snapshot"},
		{write("snap2.json.gz", []byte(` {"device_traces": [[]], "segments": []}`), true), "memory_snapshot"},
		{write("snap3.json", []byte(`{"allocator_settings": {"a": [1, {"b": "}"}]}, "segments": []}`), false), "memory_snapshot"},
		{write("trace.json", []byte(`{"traceEvents": [{"name": "segments"}], "deviceProperties": []}`), false), "kineto"},
		{write("list.json", []byte(`[{"segments": []}]`), false), "kineto"},
		{write("cut.json", []byte(`{"deviceProperties": [{"name": "H1`), false), "kineto"},
		{write("export.json", []byte("SQLite format 3\x00rest"), false), "nsys_sqlite"},
		{write("not.sqlite", []byte("SQLite format 2\x00rest"), false), "kineto"},
		{write("k.csv", []byte("==PROF== Connected\n\"ID\",\"Kernel Name\",\"x\"\n"), false), "ncu_csv"},
		// the header past the head, within ncu's 4096 lines
		{write("k2.csv", []byte(strings.Repeat(strings.Repeat("x", 99)+"\n", 800)+"\"ID\",\"Kernel Name\"\n"), false), "ncu_csv"},
		{write("k3.csv", []byte(strings.Repeat("x\n", 5000)+"\"ID\",\"Kernel Name\"\n"), false), "kineto"},
		{write("k.txt", []byte("\"ID\",\"Kernel Name\",\"x\"\n"), false), "kineto"},
		{write("run.SH", []byte("torchrun train.py\n"), false), "launch_script"},
		{write("m.prom", []byte("DCGM_FI_DEV_GPU_UTIL 1\n"), false), "dcgm_scrape"},
		{write("empty.json", nil, false), "kineto"},
		{filepath.Join(dir, "missing.json"), "kineto"},
		{filepath.Join(dir, "missing.sh"), "launch_script"},
	}
	for _, c := range cases {
		if got := Sniff(c.path).Name(); got != c.want {
			t.Errorf("%s: sniffed as %s, want %s", filepath.Base(c.path), got, c.want)
		}
	}
	names := map[string]bool{}
	for _, r := range Readers() {
		names[r.Name()] = true
	}
	if len(names) != 6 {
		t.Errorf("readers %v: want six formats", names)
	}
}
