package server

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/trainscope/trainscope/detectors/httpapi"
	"github.com/trainscope/trainscope/detectors/live"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/sql/archive"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/sql/flightsrv"
)

// StartQueryNode starts 'serve --query-only': Flight SQL and HTTP over
// the fleet archive (serve.archive) that every ingestor writes, through an
// in-memory DuckDB whose tables are views over the archive's Parquet
// files. It runs no NATS, ingestor or detectors; WithClock does not
// apply.
func StartQueryNode(parent context.Context, cfg *config.Config, logf func(string, ...any), opts ...Option) (_ *Server, err error) {
	o := newOptions(opts)
	ctx, cancel := context.WithCancel(parent)
	s := &Server{cancel: cancel}
	defer func() {
		if err != nil {
			s.Shutdown()
		}
	}()
	sec, err := listenerSecurity(cfg)
	if err != nil {
		return nil, err
	}
	dir := cfg.Serve.Archive
	var remote *archive.Remote
	if archive.IsRemote(dir) {
		if remote, err = archive.NewRemote(dir, cfg.ArchiveS3()); err != nil {
			return nil, &config.Error{Err: fmt.Errorf("serve.archive: %w", err)}
		}
		// the DuckDB here reads local files only: mirror the bucket
		dir = filepath.Join(cfg.Serve.DataDir, "archive-mirror")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	} else if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err == nil {
			err = fmt.Errorf("not a folder")
		}
		return nil, &config.Error{Err: fmt.Errorf("serve --query-only: archive %s: %w", dir, err)}
	}
	memLimit := cmp.Or(cfg.DuckDB.MemoryLimit, cfg.Serve.Query.MemoryLimit, defaultMemoryLimit())
	if s.st, err = duck.Open(ctx, "", duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: memLimit}); err != nil {
		return nil, err
	}
	// Nothing here writes: the database reads the archive's folder and
	// nothing else, and its settings (memory_limit above) are locked.
	if err := (flightsrv.Lockdown{Dirs: []string{dir}, Lock: true}).Apply(ctx, s.st); err != nil {
		return nil, err
	}
	att := &archive.Attacher{Dir: dir}
	var mu sync.Mutex
	var lastErr error
	var tables []string
	refresh := func() {
		if remote != nil {
			fetched, removed, err := remote.Mirror(ctx, dir)
			if err != nil {
				mu.Lock()
				lastErr = err
				mu.Unlock()
				logf("archive %s: %v", remote, err)
				return
			}
			if fetched+removed > 0 {
				logf("archive %s: fetched %d files, removed %d", remote, fetched, removed)
			}
		}
		got, err := att.Attach(ctx, s.st)
		mu.Lock()
		defer mu.Unlock()
		lastErr = err
		tables = append(tables, got...)
		if err != nil {
			logf("archive %s: %v", cfg.Serve.Archive, err)
		} else if len(got) > 0 {
			logf("archive %s: serving %v", cfg.Serve.Archive, got)
		}
	}
	refresh()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(cfg.Serve.ArchiveRefresh)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				refresh()
			}
		}
	}()
	if err := s.listen(ctx, cfg, sec, logf, func(started time.Time) *httpapi.API {
		return &httpapi.API{Version: o.version, FlightAddr: s.flightAddr, Reports: noReports{},
			Health: func(context.Context) (string, bool) {
				mu.Lock()
				defer mu.Unlock()
				if lastErr != nil {
					return "archive: " + lastErr.Error(), false
				}
				return "ok", true
			},
			Info: func() map[string]any {
				mu.Lock()
				defer mu.Unlock()
				return map[string]any{"mode": "query-only", "archive": cfg.Serve.Archive, "flight_sql": s.flightAddr,
					"tables": append([]string(nil), tables...), "uptime_s": int64(time.Since(started).Seconds())}
			}}
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// noReports is a query node's report list: reports live with the
// ingestor that analysed the run; the archive holds their findings.
type noReports struct{}

func (noReports) Report(string) *live.Report { return nil }
func (noReports) List() []*live.Report       { return []*live.Report{} }
