package ruletest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
)

// TestDir runs every rule-test file of dir as a subtest of t (named after
// the file), each case a subtest of it; a failed case logs its Report.
// cfg.Dirs adds folders of one's own detectors.
func TestDir(t *testing.T, dir string, cfg detectors.Config) {
	t.Helper()
	ctx := context.Background()
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSuite(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), func(t *testing.T) {
			f, err := s.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range f.Cases {
				t.Run(c.Name, func(t *testing.T) {
					r, err := s.runCase(ctx, f, c)
					if err != nil {
						t.Fatal(err)
					}
					if r.Failed() {
						t.Error(r.Report())
					}
				})
			}
		})
	}
}
