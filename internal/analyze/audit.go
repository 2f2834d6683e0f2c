package analyze

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/ingest/script"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/sql/duck"
)

// AuditOptions are 'trainscope audit's flags.
type AuditOptions struct {
	GPU         string // for scripts that name none
	Format, Out string
	Config      string
	Env         []string // KEY=VALUE the launch environment sets
}

// Audit judges the launch scripts at paths and writes a perf-doctor
// report for each: 'trainscope audit'.
func Audit(ctx context.Context, paths []string, o AuditOptions, out, errOut io.Writer) error {
	if len(paths) == 0 {
		return cli.Usage("audit: name at least one launch script (see 'trainscope audit --help')")
	}
	if err := checkFormat("audit", o.Format); err != nil {
		return err
	}
	if o.GPU != "" {
		if _, ok := gpu.Lookup(o.GPU); !ok {
			return cli.Usage(fmt.Sprintf("audit: --gpu %q: unknown GPU (known: %s)", o.GPU, strings.Join(gpu.Keys(), ", ")))
		}
	}
	opt := script.Options{Env: map[string]string{}}
	for _, kv := range o.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return cli.Usage(fmt.Sprintf("audit: --env %q: want KEY=VALUE", kv))
		}
		opt.Env[k] = v
	}
	cfg, err := config.Load(o.Config)
	if err != nil {
		return err
	}
	set, err := detectors.NewAuditSet(cfg.Detectors)
	if err != nil {
		return cli.Input(err)
	}
	st, err := duck.Open(ctx, "", duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit})
	if err != nil {
		return err
	}
	defer st.Close()

	parsed := 0
	var failures []string
	for i, path := range paths {
		// Run ids keep the command-line order in the report.
		runID := fmt.Sprintf("audit-%03d-%s", i+1, filepath.Base(path))
		popt := opt
		if popt.SearchRoot == "" {
			popt.SearchRoot = ingest.ModelSearchRoot(path)
		}
		sc, perr := script.ParseFile(path, popt)
		if perr == nil && !sc.IsLaunchScript() && len(sc.Problems) > 0 {
			perr = sc.Problems[len(sc.Problems)-1] // what the file is instead
		}
		if perr != nil && !sc.IsLaunchScript() {
			// Unreadable or not a shell script: nothing to judge; it
			// still gets a report naming its problem.
			failures = append(failures, perr.Error())
			if len(sc.Context.Problems) == 0 {
				// The parser leaves an unreadable file's context empty;
				// the report must still say why nothing was found.
				sc.Context.Problems = []string{perr.Error()}
			}
		} else {
			parsed++
		}
		if err := ingest.Send(ctx, ingest.StoreSink{St: st}, path, ingest.ScriptBatches(sc, runID), cli.Warn(errOut)); err != nil {
			return err
		}
	}
	if parsed == 0 {
		// nothing was judged: a report would only print an empty verdict
		// (and rules that fire on missing settings) under a failure
		return cli.Input(fmt.Errorf("audit: no script could be parsed: %s", strings.Join(failures, "; ")))
	}
	if _, err := set.RunAudit(ctx, st, detectors.AuditOptions{GPU: o.GPU}); err != nil {
		return err
	}
	rep, err := detectors.BuildAuditReport(ctx, st)
	if err != nil {
		return err
	}
	return writeAudit(rep, o.Format, o.Out, out)
}
