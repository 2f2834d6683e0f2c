package detectors_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/detectors/report/html"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// benchTraces is the run BenchmarkWriteHTML renders: syn8 (8 ranks, 1.7M
// events; `bash bench/syn8.sh` builds it), the size the HTML report is
// measured at in bench/RESULTS.md.
var benchTraces = "../bench/syn8"

var syn8Report = sync.OnceValues(func() (*report.Report, error) {
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	files, err := ingest.Discover([]string{benchTraces})
	if err != nil {
		return nil, err
	}
	if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: "syn8", Rank: -1}); err != nil {
		return nil, err
	}
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		return nil, err
	}
	if err := detectors.SetWindow(ctx, st, detectors.Window{}); err != nil {
		return nil, err
	}
	res, err := set.Run(ctx, st)
	if err != nil {
		return nil, err
	}
	return detectors.BuildReport(ctx, st, res)
})

func benchReport(b *testing.B) *report.Report {
	b.Helper()
	if _, err := os.Stat(benchTraces); err != nil {
		b.Skipf("no %s (bash bench/syn8.sh builds it): %v", benchTraces, err)
	}
	rep, err := syn8Report()
	if err != nil {
		b.Fatal(err)
	}
	return rep
}

// BenchmarkWriteHTML times rendering the HTML page (markdown, contents,
// charts) of a syn8-size report; building the report is not timed.
func BenchmarkWriteHTML(b *testing.B) {
	rep := benchReport(b)
	var size int64
	b.ReportAllocs()
	for b.Loop() {
		cw := &countWriter{}
		if err := html.Write(cw, rep); err != nil {
			b.Fatal(err)
		}
		size = cw.n
	}
	b.ReportMetric(float64(size), "page-bytes")
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// BenchmarkHTMLPage times the page of the same report's full markdown
// without charts: what serve renders for a report it keeps.
func BenchmarkHTMLPage(b *testing.B) {
	var md strings.Builder
	if err := benchReport(b).WriteMarkdownFull(&md); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		html.Page(md.String())
	}
}
