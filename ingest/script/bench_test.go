package script

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkParse parses one launch script of each framework from the
// corpus, sourced model configs included, and builds its records.
func BenchmarkParse(b *testing.B) {
	corpusDir := corpusRoot(b)
	for _, p := range []string{
		"relax/scripts/training/text/run-qwen36-35B-A3B-8xgpu.sh",
		"slime/scripts/run-qwen3-30B-A3B.sh",
		"megatron/examples/llama/train_llama3_8b_h100_fp8.sh",
		"verl/examples/grpo_trainer/run_qwen3moe-30b_megatron_96gb.sh",
	} {
		path := filepath.Join(corpusDir, p)
		src, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(strings.Split(p, "/")[0], func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				s, _ := Parse(path, src, Options{})
				f, c := s.Records("bench")
				f.Release()
				c.Release()
			}
		})
	}
}

// BenchmarkCorpus parses every launch script and model config of the
// corpus (sourced files included) and builds its records: the cost of
// auditing the whole corpus once.
func BenchmarkCorpus(b *testing.B) {
	corpusDir := corpusRoot(b)
	var paths []string
	var size int64
	err := filepath.WalkDir(corpusDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".sh") {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		paths = append(paths, p)
		size += fi.Size()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(size)
	for b.Loop() {
		for _, p := range paths {
			s, _ := ParseFile(p, Options{})
			f, c := s.Records("bench")
			f.Release()
			c.Release()
		}
	}
}
