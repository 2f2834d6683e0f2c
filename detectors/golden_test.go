package detectors_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/trainscope/trainscope/detectors/report/html"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/ingest/memsnap"
	"github.com/trainscope/trainscope/sql/duck"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// TestGoldenReports renders each case's report as markdown and JSON (and
// the hand case's as HTML) and compares it with testdata/<case>/want.{md,json,html};
// -update rewrites them.
func TestGoldenReports(t *testing.T) {
	cases := []struct {
		name     string
		dir      func(t *testing.T) string
		cfg      detectors.Config
		snapshot string // a corpus memory snapshot to profile instead of traces
	}{
		{"hand", handRun, lowThresholds, ""},
		{"nccl_parser_config", corpusDir("hta/tests__data__nccl_parser_config__nccl_data.json.gz"), detectors.Config{}, ""},
		{"magma27_snapshot", nil, detectors.Config{}, "memsnap/magma27_memory_snapshot.json.gz"},
		{"sampled_pair", corpusDir("hta/tests__data__trace_filter__sampled_rank-0.json.gz", "hta/tests__data__trace_filter__sampled_rank-1.json.gz"), detectors.Config{}, ""},
		// checked by hand with an independent Python pass over the trace:
		// GPU span 49.65 ms, busy 91.9%; 3 synchronizing calls, 16.28 ms,
		// the longest cudaDeviceSynchronize 14.10 ms; tqdm's monitor thread
		// (no CUDA calls) is not reported as keeping the GPU idle
		{"tracelens_h100_qwen", corpusDir("tracelens/tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"), detectors.Config{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var st *duck.Store
			var res []detectors.Result
			if c.snapshot != "" {
				st, res = profileSnapshot(t, corpus.Path(t, c.snapshot), c.name)
			} else {
				st, res = analyzeDir(t, c.dir(t), c.name, detectors.Window{}, c.cfg)
			}
			rep, err := detectors.BuildReport(context.Background(), st, res)
			if err != nil {
				t.Fatal(err)
			}
			var md, js bytes.Buffer
			if err := rep.WriteMarkdown(&md); err != nil {
				t.Fatal(err)
			}
			if err := rep.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", c.name, "want.md"), md.Bytes())
			golden(t, filepath.Join("testdata", c.name, "want.json"), js.Bytes())
			if c.name == "hand" { // the HTML renders the markdown: one case shows it
				var page bytes.Buffer
				if err := html.Write(&page, rep); err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join("testdata", c.name, "want.html"), page.Bytes())
			}
		})
	}
}

// profileSnapshot loads a memory snapshot as rank 0 of runID and runs the
// detectors, as `trainscope profile --memory` does.
func profileSnapshot(t *testing.T, path, runID string) (*duck.Store, []detectors.Result) {
	t.Helper()
	snap, err := memsnap.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := ingest.InsertSnapshot(ctx, st, snap, runID, "", 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Exec(ctx, `INSERT INTO ranks (run_id, rank, host, source, rank_source, events, json_bytes) VALUES (?, 0, '', ?, 'snapshot', ?, ?)`,
		runID, filepath.Base(path), int64(snap.Segments.Len()+snap.Events.Len()), snap.JSONBytes); err != nil {
		t.Fatal(err)
	}
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := detectors.SetWindow(ctx, st, detectors.Window{}); err != nil {
		t.Fatal(err)
	}
	res, err := set.Run(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	return st, res
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w []byte
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if !bytes.Equal(g, w) {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s\n(run with -update if the change is intended)", path, i+1, g, w)
			}
		}
	}
}

// corpusDir links corpus files (named from the corpus's kineto folder)
// into a temporary folder under their own names (the run id comes from
// the test case, not the folder).
func corpusDir(files ...string) func(t *testing.T) string {
	return func(t *testing.T) string {
		dir := t.TempDir()
		for _, f := range files {
			src, err := filepath.Abs(corpus.Path(t, "kineto/"+f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(src, filepath.Join(dir, filepath.Base(f))); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
}
