package kineto

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/stream"
)

// recordRows renders every row of recs, column by column, with strings
// for dictionary values: string ids may differ between two reads.
func recordRows(recs []arrow.RecordBatch) []string {
	var out []string
	for _, r := range recs {
		for i := range int(r.NumRows()) {
			var b strings.Builder
			for c, col := range r.Columns() {
				fmt.Fprintf(&b, "%s=%s ", r.ColumnName(c), col.ValueStr(i))
			}
			out = append(out, b.String())
		}
		r.Release()
	}
	return out
}

// stackRows renders a table's call stacks by name.
func stackRows(tr *Trace) []string {
	var out []string
	for i, n := range tr.Slices.Stacks {
		out = append(out, fmt.Sprintf("%d: parent %d depth %d %s %s", i, n.Parent, n.Depth, tr.Str.Get(n.Kind), tr.Str.Get(n.Name)))
	}
	return out
}

// A trace read in two passes gives the same rows, in the same order, as
// read whole, and the same trace-level tables: every corpus trace, the
// sample ranks, and traces made to need each part of finish (flows for
// missing correlation ids, a time base, B/E pairs). Chunks of 97 rows make
// every trace many chunks.
func TestTwoPassReadsTheSameRows(t *testing.T) {
	defer func(n int) { chunkRows = n }(chunkRows)
	chunkRows = 97
	files := corpus.Glob(t, "kineto/*/*.json*")
	sample, _ := filepath.Glob("../../bench/sample/*.json.gz")
	files = append(files, sample...)
	dir := t.TempDir()
	for name, doc := range map[string]string{
		"basic.json":      basicTrace,
		"flows.json":      strings.ReplaceAll(basicTrace, `"correlation": 77, `, ""),
		"base_time.json":  strings.Replace(basicTrace, `"schemaVersion": 1,`, `"schemaVersion": 1, "baseTimeNanoseconds": 1700000000000000000,`, 1),
		"no_slices.json":  `{"traceEvents": [{"ph": "C", "name": "queue", "pid": 1, "ts": 5, "args": {"value": 3}}]}`,
		"one_chunk.json":  `{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"device": 3}}]}`,
		"exact_rows.json": exactChunks(2 * 97),
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	if len(files) < 10 {
		t.Fatalf("only %d traces to read: is testdata/corpus there?", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			whole, err := ReadFile(f, Options{Rank: -1})
			if err != nil {
				if strings.Contains(err.Error(), "snapshot") {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			sameInTwoPasses(t, f, whole, 0)
		})
	}
}

// exactChunks is a trace of n kernel slices.
func exactChunks(n int) string {
	var b strings.Builder
	b.WriteString(`{"traceEvents": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"ph": "X", "cat": "kernel", "name": "k%d", "pid": 0, "tid": 7, "ts": %d, "dur": 2}`, i%5, 10*i)
	}
	b.WriteString("]}")
	return b.String()
}

// A file that changes between the two passes is an error, not rows
// matched to the wrong row's steps.
func TestTwoPassFileChanged(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(p, []byte(exactChunks(10)), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := ReadFileTwoPass(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{9, 11} {
		if err := os.WriteFile(p, []byte(exactChunks(n)), 0o644); err != nil {
			t.Fatal(err)
		}
		err := tr.EachChunk(func(*stream.SliceTable, *stream.CounterTable) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "changed while it was read") {
			t.Errorf("%d rows the second time: %v", n, err)
		}
	}
	// cut short: the error names the file once, and the byte
	if err := os.WriteFile(p, []byte(exactChunks(10)[:300]), 0o644); err != nil {
		t.Fatal(err)
	}
	err = tr.EachChunk(func(*stream.SliceTable, *stream.CounterTable) error { return nil })
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Path != p || strings.Count(err.Error(), p) != 1 || !strings.Contains(err.Error(), "has changed") {
		t.Errorf("a file cut short the second time: %v", err)
	}
}

// sameInTwoPasses fails unless the file at f read in two passes (chunks of
// chunk rows; 0: chunkRows) gives the rows and tables of whole, the same
// file read whole.
func sameInTwoPasses(t testing.TB, f string, whole *Trace, chunk int) {
	t.Helper()
	limit := chunkRows
	if chunk > 0 {
		limit = chunk
	}
	twice, err := ReadFileTwoPass(f, Options{Rank: -1, ChunkRows: chunk})
	if err != nil {
		t.Fatal(err)
	}
	if twice.Slices.Len() != whole.Slices.Len() || twice.TwoPass() != (whole.Slices.Len() > 0) {
		t.Fatalf("%d slices (two-pass %v), want %d", twice.Slices.Len(), twice.TwoPass(), whole.Slices.Len())
	}
	d1, ok1 := whole.Device()
	d2, ok2 := twice.Device()
	if d1 != d2 || ok1 != ok2 || whole.GPUName() != twice.GPUName() {
		t.Errorf("device %d %v, want %d %v", d2, ok2, d1, ok1)
	}
	for _, c := range []struct {
		what string
		a, b any
	}{
		{"steps", steps(whole), steps(twice)},
		{"counts", whole.Counts, twice.Counts}, {"span", [2]int64{whole.StartNS, whole.EndNS}, [2]int64{twice.StartNS, twice.EndNS}},
		{"rank", [2]any{whole.Rank, whole.RankSource}, [2]any{twice.Rank, twice.RankSource}},
		{"threads", whole.ThreadNames, twice.ThreadNames}, {"notes", whole.Notes, twice.Notes},
		{"stacks", stackRows(whole), stackRows(twice)},
	} {
		if !reflect.DeepEqual(c.a, c.b) {
			t.Errorf("%s differ:\n got  %v\n want %v", c.what, c.b, c.a)
		}
	}
	wantCore, wantDetail := whole.Slices.TakeRecords("r", "h", whole.Rank)
	var gotCore, gotDetail []arrow.RecordBatch
	chunks := 0
	// the counters come with the chunks, and those after the last slice
	// in twice.Counters
	var gotCounters []counterRow
	if twice.TwoPass() && twice.Counters.Len() > 0 {
		t.Errorf("%d counters held before the second pass", twice.Counters.Len())
	}
	err = twice.EachChunk(func(c *stream.SliceTable, cs *stream.CounterTable) error {
		chunks++
		if c.Len() > limit {
			t.Errorf("a chunk of %d rows, more than %d", c.Len(), limit)
		}
		if cs != nil {
			gotCounters = append(gotCounters, counterRows(twice.Str, cs)...)
		}
		core, detail := c.TakeRecords("r", "h", twice.Rank)
		gotCore, gotDetail = append(gotCore, core...), append(gotDetail, detail)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	gotCounters = append(gotCounters, counters(twice)...)
	if want := counters(whole); !reflect.DeepEqual(gotCounters, want) {
		t.Errorf("counters differ:\n got  %v\n want %v", gotCounters, want)
	}
	if n := whole.Slices.Len(); n > 0 && chunks != (n+limit-1)/limit {
		t.Errorf("%d chunks for %d rows", chunks, n)
	}
	for _, p := range []struct {
		what      string
		want, got []arrow.RecordBatch
	}{{"slices_core", wantCore, gotCore}, {"slices_detail", []arrow.RecordBatch{wantDetail}, gotDetail}} {
		w, g := recordRows(p.want), recordRows(p.got)
		if len(w) != len(g) {
			t.Errorf("%s: %d rows, want %d", p.what, len(g), len(w))
			continue
		}
		for i := range w {
			if w[i] != g[i] {
				t.Errorf("%s row %d:\n got  %s\n want %s", p.what, i, g[i], w[i])
				break
			}
		}
	}
}
