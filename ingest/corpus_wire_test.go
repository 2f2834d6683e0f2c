package ingest

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/stream/transport"
)

// What the readers make of every real artifact in the corpus, the
// consumer accepts: each batch, cut into wire messages, passes Decode's
// checks. A check stricter than the readers would reject real runs at
// the server (negative self times of real traces once did).
func TestCorpusBatchesPassTheWireChecks(t *testing.T) {
	var files []string
	for _, pat := range []string{"kineto/*/*.json", "kineto/*/*.json.gz", "kineto/*/*.raw.gz", "nsys/*.sqlite", "memsnap/*.json.gz"} {
		files = append(files, corpus.Glob(t, pat)...)
	}
	// launch scripts, however deep they sit
	filepath.WalkDir(corpus.Dir(t, "scripts"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && IsScript(path) {
			files = append(files, path)
		}
		return nil
	})
	messages := 0
	if len(files) == 0 {
		t.Fatal("no corpus artifacts")
	}
	for _, f := range files {
		var c Collect
		_, err := Read(context.Background(), &c, []string{f}, Options{RunID: "corpus", Host: "node-1", Rank: -1, Workers: 1})
		if err != nil {
			if IsInputError(err) {
				continue // not an artifact analyze reads (an execution trace): its test is elsewhere
			}
			t.Fatalf("%s: %v", f, err)
		}
		for _, b := range c.Batches {
			msgs, err := transport.Messages(b.Table, b.Rec, transport.DefaultPublisher.MessageBytes)
			if err != nil {
				t.Fatalf("%s: %s: %v", f, b.Table, err)
			}
			for i, m := range msgs {
				tbl, rec, err := transport.Decode(m)
				if err != nil {
					t.Errorf("%s: %s message %d: %v", filepath.Base(f), b.Table, i, err)
					continue
				}
				if tbl != b.Table {
					t.Errorf("%s: message of %s decoded as %s", f, b.Table, tbl)
				}
				rec.Release()
				messages++
			}
		}
		Release(c.Batches)
	}
	t.Logf("%d artifacts, %d messages", len(files), messages)
	if messages < len(files) {
		t.Errorf("only %d messages from %d artifacts", messages, len(files))
	}
}
