// Command scale turns one real rank trace into N rank traces by rewriting
// only the rank and world size in its distributedInfo, so that benchmarks
// and demos run on real event mixes at any rank count.
//
//	go run ./bench/scale -in TRACE.json.gz -ranks 8 -out DIR
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

func main() {
	in := flag.String("in", "", "input trace (.json or .json.gz)")
	ranks := flag.Int("ranks", 8, "number of rank files to write")
	out := flag.String("out", "", "output folder")
	level := flag.Int("level", gzip.DefaultCompression, "gzip level of the outputs (0 writes plain .json)")
	flag.Parse()
	if *in == "" || *out == "" || *ranks < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*in, *out, *ranks, *level); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

var distInfo = regexp.MustCompile(`"distributedInfo"\s*:\s*\{[^{}]*(\{[^{}]*\}[^{}]*)*\}`)
var rankField = regexp.MustCompile(`"rank"\s*:\s*-?\d+`)
var worldField = regexp.MustCompile(`"world_size"\s*:\s*\d+`)

func run(in, out string, n, level int) error {
	raw, err := readAll(in)
	if err != nil {
		return err
	}
	loc := distInfo.FindIndex(raw)
	if loc == nil {
		return fmt.Errorf("%s: no distributedInfo object to rewrite", in)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(in), ".gz"), ".json")
	for r := range n {
		di := raw[loc[0]:loc[1]]
		di = rankField.ReplaceAll(di, fmt.Appendf(nil, `"rank": %d`, r))
		di = worldField.ReplaceAll(di, fmt.Appendf(nil, `"world_size": %d`, n))
		if !rankField.Match(di) {
			di = bytes.Replace(di, []byte("{"), fmt.Appendf(nil, `{"rank": %d, `, r), 1)
		}
		name := filepath.Join(out, fmt.Sprintf("rank-%d.%s.json", r, base))
		if level != 0 {
			name += ".gz"
		}
		f, err := os.Create(name)
		if err != nil {
			return err
		}
		var w io.Writer = f
		var zw *gzip.Writer
		if level != 0 {
			zw, _ = gzip.NewWriterLevel(f, level)
			w = zw
		}
		for _, part := range [][]byte{raw[:loc[0]], di, raw[loc[1]:]} {
			if _, err := w.Write(part); err != nil {
				return err
			}
		}
		if zw != nil {
			if err := zw.Close(); err != nil {
				return err
			}
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

func readAll(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	head := make([]byte, 2)
	if _, err := io.ReadFull(f, head); err == nil && head[0] == 0x1f && head[1] == 0x8b {
		f.Seek(0, 0)
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		r = zr
	} else {
		f.Seek(0, 0)
	}
	return io.ReadAll(r)
}
