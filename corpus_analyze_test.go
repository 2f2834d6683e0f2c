package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
)

// corpusInputs are the real artifacts of the corpus (testdata/corpus, and
// a full corpus's extra files when there is one) that analyze reads:
// every Kineto trace, Nsight Systems and Compute export and memory
// snapshot.
func corpusInputs(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"kineto/*/*.json", "kineto/*/*.json.gz", "kineto/*/*.raw.gz", "nsys/*.sqlite", "memsnap/*.json.gz", "ncu/*.csv"} {
		m := corpus.Glob(t, pat)
		if len(m) == 0 {
			t.Fatalf("no corpus files match %s", pat)
		}
		files = append(files, m...)
	}
	slices.Sort(files)
	return files
}

// Every corpus artifact goes through analyze to a report in which every
// detector ran: the readers alone passing is not enough (a detector once
// failed on one of these traces and took the whole report with it).
func TestAnalyzeEveryCorpusArtifact(t *testing.T) {
	// not traces: analyze must say so and what to do, with exit 2
	notTraces := map[string]string{
		"tests__data__execution_trace__benchmark_simple_add_et.json.gz": "Execution Trace",
	}
	for _, f := range corpusInputs(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			code := run(context.Background(), []string{"analyze", "-q", "--workers", "1", f}, &out, &errOut)
			if want, ok := notTraces[filepath.Base(f)]; ok {
				if code != 2 || !strings.Contains(errOut.String(), want) || !strings.Contains(errOut.String(), filepath.Base(f)) {
					t.Fatalf("exit %d, stderr %q: want exit 2 naming the file and %q", code, errOut.String(), want)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			rep := out.String()
			if !strings.HasPrefix(rep, "# trainscope report\n") || !strings.Contains(rep, "## Findings") {
				t.Fatalf("no report:\n%s", head(rep, 10))
			}
			if strings.Contains(rep, "## Detectors that failed") || strings.Contains(errOut.String(), "warning") {
				t.Errorf("a detector failed on a real trace:\n%s", errOut.String())
			}
		})
	}
}

// Each corpus dcgm-exporter scrape goes through analyze beside the sample
// run to a report in which every detector ran; its only warning is that
// the exporter wrote no timestamps.
func TestAnalyzeCorpusScrapes(t *testing.T) {
	scrapes := corpus.Glob(t, "dcgm/*.prom")
	if len(scrapes) == 0 {
		t.Fatal("no corpus scrapes dcgm/*.prom")
	}
	for _, f := range scrapes {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append([]string{"analyze", "-q", "--workers", "1", f}, sampleRun...), &out, &errOut)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			rep := out.String()
			if !strings.HasPrefix(rep, "# trainscope report\n") || strings.Contains(rep, "## Detectors that failed") {
				t.Fatalf("report:\n%s", head(rep, 20))
			}
			for _, line := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
				if strings.Contains(line, "warning") && !strings.Contains(line, "carry no timestamp") {
					t.Errorf("warning: %s", line)
				}
			}
		})
	}
}
