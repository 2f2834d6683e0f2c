package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trainscope/trainscope/ingest/watch"
	"github.com/trainscope/trainscope/stream"
)

// runFolders watches every subfolder of root as the traces folder of the
// run it is named after: what an agent does as a DaemonSet on a GPU node
// that many jobs share, each writing its traces under root/<job id>/.
type runFolders struct {
	root string
	base watch.Config // Dir and StatePath are set per run
	logf func(format string, args ...any)

	mu      sync.Mutex
	started map[string]bool
	latest  string // the run whose folder changed last
	wg      sync.WaitGroup
}

// Watch watches the run folders until ctx ends; with once, it publishes
// what each holds now, then returns.
func (r *runFolders) Watch(ctx context.Context, n Node, once bool) error {
	if once {
		return r.scan(ctx, n.Publish, true)
	}
	return r.run(ctx, n.Publish)
}

// scan starts a watcher on each new run folder (Once instead when once),
// and notes the folder that changed last. With once, a folder whose files
// failed (a corrupt trace, recorded as failed) does not stop the folders
// after it: the error names every folder's failures at the end.
func (r *runFolders) scan(ctx context.Context, publish PublishFunc, once bool) error {
	entries, err := os.ReadDir(r.root)
	if err != nil {
		return err
	}
	type folder struct {
		name string
		mod  time.Time
	}
	var runs []folder
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if err := stream.CheckRunID(e.Name()); err != nil {
			r.logf("skipping %s: not a run id: %v", filepath.Join(r.root, e.Name()), err)
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		runs = append(runs, folder{e.Name(), fi.ModTime()})
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].mod.Before(runs[j].mod) })
	r.mu.Lock()
	if len(runs) > 0 {
		r.latest = runs[len(runs)-1].name
	}
	r.mu.Unlock()
	var failed []error
	for _, f := range runs {
		r.mu.Lock()
		seen := r.started[f.name]
		r.started[f.name] = true
		r.mu.Unlock()
		if seen {
			continue
		}
		cfg := r.base
		cfg.Dir, cfg.StatePath = filepath.Join(r.root, f.name), ""
		run := f.name
		pub := func(ctx context.Context, path string) error { return publish(ctx, run, path) }
		if once {
			if err := watch.Once(ctx, cfg, pub, r.logf); err != nil {
				if ctx.Err() != nil {
					return err
				}
				r.logf("run %s: %v", f.name, err)
				failed = append(failed, fmt.Errorf("run %s: %w", f.name, err))
			}
			continue
		}
		r.logf("run %s: watching %s", f.name, cfg.Dir)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := watch.Run(ctx, cfg, pub, r.logf); err != nil && ctx.Err() == nil {
				r.logf("run %s: %v", f.name, err)
			}
		}()
	}
	return errors.Join(failed...)
}

// Latest is the run whose folder changed last: the one a node running one
// job at a time is training, to which its GPU counters belong.
func (r *runFolders) Latest() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latest
}

// run scans every poll until ctx ends, then waits for the watchers.
func (r *runFolders) run(ctx context.Context, publish PublishFunc) error {
	r.started = map[string]bool{}
	defer r.wg.Wait()
	t := time.NewTicker(r.base.Poll)
	defer t.Stop()
	for {
		if err := r.scan(ctx, publish, false); err != nil {
			r.logf("%s: %v", r.root, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
