package ingest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/stream"
	"github.com/trainscope/trainscope/stream/transport"
)

// Whatever reader made a batch, a value outside what trainscope stores is
// an input error naming the file, table, column and row before the batch
// reaches a store or the stream; text that is not UTF-8 is repaired and
// reported.
func TestSendChecksRangesAndRepairsText(t *testing.T) {
	var warned []string
	warn := func(s string) { warned = append(warned, s) }
	bad := stream.RanksRecord([]stream.RankRow{{RunID: "r", Host: "h", Source: "x.sqlite", Rank: 0, StartNS: 1, EndNS: stream.MaxTimeNS + 5}})
	var c Collect
	err := Send(context.Background(), &c, "x.sqlite", []Batch{{"ranks", bad}}, warn)
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "x.sqlite: table ranks: column end_ns: row 0:") {
		t.Fatalf("out of range: %v", err)
	}
	if len(c.Batches) != 0 {
		t.Fatalf("the batch went on")
	}
	text := stream.RanksRecord([]stream.RankRow{{RunID: "r", Host: "h\xff", Source: "x.sqlite", Rank: 0}})
	if err := Send(context.Background(), &c, "x.sqlite", []Batch{{"ranks", text}}, warn); err != nil {
		t.Fatal(err)
	}
	defer Release(c.Batches)
	if len(warned) != 1 || !strings.HasPrefix(warned[0], "x.sqlite: 1 ranks.host value(s) were not valid UTF-8") {
		t.Errorf("warnings %q", warned)
	}
	if err := transport.CheckBatch("ranks", c.Batches[0].Rec); err != nil {
		t.Errorf("the repaired batch: %v", err)
	}
}
