//go:build duckdb_arrow

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/archive"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/sql/flightsrv"
)

// The demo store lives in a test file on purpose: it pulls in the product's
// readers, detectors and DuckDB (cgo), which the plugin binary must never
// need. The guard in pkg/imports_test.go keeps non-test code off them.

// demoRunID is the run bench/sample is loaded as.
const demoRunID = "demo"

// throttledRunID is the generated 8-rank run whose rank 3 GPU throttles
// (bench/throttled8: traces and a dcgm-exporter scrape), loaded beside the
// sample so that the hardware-counter panels and alerts have data.
const throttledRunID = "throttled"

// sampleDir is bench/sample, relative to this package's folder (the
// working directory of its tests).
const sampleDir = "../../bench/sample"

// openDemoStore loads the sample and the throttled run into a store at path
// ("" for memory), runs the detectors and records the pass in analyses, as
// the serve scheduler does.
func openDemoStore(ctx context.Context, path string) (*duck.Store, error) {
	files, err := filepath.Glob(filepath.Join(sampleDir, "*.json.gz"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no sample traces in %s (%v)", sampleDir, err)
	}
	st, err := duck.Open(ctx, path, duck.Options{})
	if err != nil {
		return nil, err
	}
	if err := loadDemo(ctx, st, files); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// throttledFiles are bench/throttled8's files.
func throttledFiles() ([]string, error) {
	dir := filepath.Join(sampleDir, "..", "throttled8")
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no throttled run in %s (%v)", dir, err)
	}
	return files, nil
}

func loadDemo(ctx context.Context, st *duck.Store, files []string) error {
	t0 := time.Now()
	if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: demoRunID, Host: "demo-node", Rank: -1, GPU: "A100-80G"}); err != nil {
		return fmt.Errorf("load sample: %w", err)
	}
	thr, err := throttledFiles()
	if err != nil {
		return err
	}
	if _, err := ingest.Load(ctx, st, thr, ingest.Options{RunID: throttledRunID, Rank: -1}); err != nil {
		return fmt.Errorf("load throttled run: %w", err)
	}
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		return err
	}
	if err := detectors.SetWindow(ctx, st, detectors.Window{}); err != nil {
		return err
	}
	results, err := set.Run(ctx, st)
	if err != nil {
		return fmt.Errorf("detectors: %w", err)
	}
	rep, err := detectors.BuildReport(ctx, st, results)
	if err != nil {
		return err
	}
	if err := detectors.SaveNodeHistory(ctx, st, rep, time.Now()); err != nil {
		return err
	}
	for _, run := range []string{demoRunID, throttledRunID} {
		if err := st.Exec(ctx, `INSERT INTO analyses (run_id, analyzed_ns, step_lo, step_hi, ranks, findings, took_ms)
			SELECT ?, ?, NULL, NULL, (SELECT count(*) FROM ranks WHERE run_id = ?), (SELECT count(*) FROM findings WHERE run_id = ?), ?`,
			run, time.Now().UnixNano(), run, run, float64(time.Since(t0).Milliseconds())); err != nil {
			return err
		}
	}
	return nil
}

// serveArchive writes the demo runs from st to a fleet archive under dir,
// as the serve scheduler does after each final pass, and serves Flight SQL
// over that archive as 'serve --query-only' does.
func serveArchive(ctx context.Context, st *duck.Store, dir string) (string, func() error, error) {
	for _, run := range []string{demoRunID, throttledRunID} {
		if _, err := archive.WriteRun(ctx, st, dir, run, time.Now()); err != nil {
			return "", nil, err
		}
	}
	q, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		return "", nil, err
	}
	if _, err := (&archive.Attacher{Dir: dir}).Attach(ctx, q); err != nil {
		q.Close()
		return "", nil, err
	}
	addr, stop, err := serveDemo(ctx, q)
	if err != nil {
		q.Close()
		return "", nil, err
	}
	return addr, func() error { err := stop(); q.Close(); return err }, nil
}

// serveDemo starts a Flight SQL server over st on a free localhost port and
// returns its address and a stop function.
func serveDemo(ctx context.Context, st *duck.Store) (string, func() error, error) {
	addr, stop, err := flightsrv.Serve(ctx, "127.0.0.1:0", st, flightsrv.Options{})
	if err != nil {
		return "", nil, err
	}
	return addr.String(), stop, nil
}
