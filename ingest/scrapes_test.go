package ingest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// loadInto loads paths into a fresh in-memory store as run r.
func loadInto(t *testing.T, opt ingest.Options, paths ...string) (*duck.Store, *ingest.Stats, error) {
	t.Helper()
	files, err := ingest.Discover(paths)
	if err != nil {
		t.Fatal(err)
	}
	st, err := duck.Open(context.Background(), "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	opt.RunID, opt.Rank = "r", -1
	stats, err := ingest.Load(context.Background(), st, files, opt)
	return st, stats, err
}

// A saved dcgm-exporter scrape placed with the traces lands in counters:
// every sample, on its Hostname's host and its gpu's device, at the file's
// modification time (the exporter writes no timestamps), with a warning
// that says so.
func TestLoadScrapeWithTraces(t *testing.T) {
	src := corpus.Path(t, "dcgm/scrape_ericsson-ccd__accelerator_metrics.prom")
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	scrape := filepath.Join(dir, "node.prom")
	if err := os.WriteFile(scrape, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var warnings []string
	st, stats, err := loadInto(t, ingest.Options{Warn: func(s string) { warnings = append(warnings, s) }}, "../bench/sample", dir)
	if err != nil {
		t.Fatal(err)
	}
	var n, hosts, devices int
	var clock float64
	var tsMin, tsMax int64
	if err := st.Conn().QueryRowContext(ctx, `SELECT count(*), count(DISTINCT host), count(DISTINCT device), min(ts), max(ts),
		max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_SM_CLOCK') FROM counters WHERE run_id = 'r' AND host = 'cp-bm14r7' AND device = 0`).Scan(&n, &hosts, &devices, &tsMin, &tsMax, &clock); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(scrape)
	if n != 20 || hosts != 1 || devices != 1 || clock != 660 || tsMin != fi.ModTime().UnixNano() || tsMax != tsMin {
		t.Errorf("counters: %d rows, %d hosts, %d devices, SM clock %v, ts %d-%d; want 20 on cp-bm14r7 gpu 0, 660 MHz, at %d",
			n, hosts, devices, clock, tsMin, tsMax, fi.ModTime().UnixNano())
	}
	// every label the exporter wrote is kept: the ones without a column of
	// their own in labels
	var uuid, model, bus, driver string
	var labelled, labelSets int
	if err := st.Conn().QueryRowContext(ctx, `SELECT count(labels), count(DISTINCT labels), any_value(labels->>'UUID'), any_value(labels->>'modelName'),
		any_value(labels->>'pci_bus_id'), any_value(labels->>'DCGM_FI_DRIVER_VERSION') FROM counters WHERE run_id = 'r' AND host = 'cp-bm14r7'`).Scan(
		&labelled, &labelSets, &uuid, &model, &bus, &driver); err != nil {
		t.Fatal(err)
	}
	if labelled != 20 || labelSets != 1 || uuid != "GPU-6d5c0ac5-74d7-3130-46f1-e93ed57f469a" || model != "Tesla T4" || bus != "00000000:37:00.0" || driver != "590.48.01" {
		t.Errorf("labels: %d rows in %d sets, UUID %q, model %q, bus %q, driver %q", labelled, labelSets, uuid, model, bus, driver)
	}
	// the sample's traces name no host: the run's only counter host is
	// theirs, and its gpu 0 is rank 0's device
	var ranked, rank0 int
	if err := st.Conn().QueryRowContext(ctx, `SELECT count(rank), count(*) FILTER (WHERE rank = 0) FROM counters_by_rank WHERE run_id = 'r' AND host = 'cp-bm14r7'`).Scan(&ranked, &rank0); err != nil || ranked != 20 || rank0 != 20 {
		t.Errorf("counters_by_rank gave %d rows a rank, %d rank 0 (%v); want all 20 on rank 0", ranked, rank0, err)
	}
	found := false
	for _, f := range stats.Files {
		found = found || f.Format == "dcgm_scrape" && f.Events == 20
	}
	if !found || !strings.Contains(strings.Join(warnings, "\n"), "node.prom: 20 sample(s) in 1 scrape(s) carry no timestamp") {
		t.Errorf("file stats %+v, warnings %q", stats.Files, warnings)
	}
}

// A scrape that is not one is an input error naming the file and line.
func TestLoadBadScrape(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.prom")
	if err := os.WriteFile(bad, []byte("DCGM_FI_DEV_SM_CLOCK{gpu=\"0\"} 1\nDCGM_FI_DEV_GPU_TEMP{gpu=\"0\" 31\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := loadInto(t, ingest.Options{}, bad)
	var ie *ingest.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "bad.prom: text format parsing error in line 2") {
		t.Errorf("error %v, want an input error at bad.prom line 2", err)
	}
}

// On the scrape's own host, gpu 0 is the rank whose GPU work ran on device
// 0 (rank 0 of the sample; rank 1 ran on device 1).
func TestCountersByRank(t *testing.T) {
	src := corpus.Path(t, "dcgm/scrape_ericsson-ccd__accelerator_metrics.prom")
	ctx := context.Background()
	// every rank on the scrape's host, as --host cp-bm14r7 says
	st, _, err := loadInto(t, ingest.Options{Host: "cp-bm14r7"}, "../bench/sample", src)
	if err != nil {
		t.Fatal(err)
	}
	var n, rank0 int
	if err := st.Conn().QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE rank = 0) FROM counters_by_rank WHERE run_id = 'r'`).Scan(&n, &rank0); err != nil {
		t.Fatal(err)
	}
	if n != 20 || rank0 != 20 {
		t.Errorf("counters_by_rank: %d rows, %d on rank 0; want 20 and 20", n, rank0)
	}
}
