package analyze

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/perfetto"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/sql/duck"
)

// ExportOptions are 'trainscope export's flags.
type ExportOptions struct {
	Perfetto     string // the Chrome trace to write; - for stdout
	DB           string // a database analyze --db wrote, instead of files
	Steps, Ranks string
	Run, Host    string
	Rank         int
	Config       string
	Quiet        bool
}

// Export writes the analysed window of a run, read from the files at
// paths or from o.DB, as a Perfetto trace with the findings marked on
// it: 'trainscope export'.
func Export(ctx context.Context, paths []string, o ExportOptions, out, errOut io.Writer) error {
	switch {
	case o.Perfetto == "":
		return cli.Usage("export: --perfetto OUT.json is required (see 'trainscope export --help')")
	case o.DB == "" && len(paths) == 0:
		return cli.Usage("export: give trace files or folders, or --db FILE")
	case o.DB != "" && len(paths) > 0:
		return cli.Usage("export: give trace files or --db, not both")
	}
	window, ranks, err := selection("export", o.Run, o.Steps, o.Ranks)
	if err != nil {
		return err
	}
	cfg, err := config.Load(o.Config)
	if err != nil {
		return err
	}
	set, err := detectors.NewSet(cfg.DetectorsConfig())
	if err != nil {
		return cli.Input(err)
	}
	var st *duck.Store
	if o.DB != "" {
		if _, err := os.Stat(o.DB); err != nil {
			return cli.Input(fmt.Errorf("export: %w", err))
		}
		st, err = duck.Open(ctx, o.DB, duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit})
		if err != nil {
			return err
		}
	} else {
		files, err := ingest.Discover(paths)
		if err != nil {
			return cli.Input(err)
		}
		st, err = duck.Open(ctx, "", duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit})
		if err != nil {
			return err
		}
		if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: o.Run, Host: o.Host, Rank: o.Rank, Ranks: ranks,
			Progress: progressTo(errOut, o.Quiet), Warn: cli.Warn(errOut), ReadMemory: cfg.ReadMemoryBytes()}); err != nil {
			st.Close()
			return inputErr(err)
		}
	}
	defer st.Close()
	rep, err := detect(ctx, st, set, window, o.Steps, errOut)
	if err != nil {
		return err
	}
	run := o.Run
	if o.DB == "" {
		run = "" // the loaded run is the report's only one
	}
	var stats perfetto.Stats
	path := o.Perfetto
	if path == "-" {
		path = "" // stdout
	}
	err = writeTo(path, out, func(w io.Writer) error {
		var err error
		stats, err = perfetto.Write(ctx, st, rep, w, perfetto.Options{Run: run, Ranks: ranks})
		return err
	})
	if err != nil {
		return err
	}
	if !o.Quiet {
		fmt.Fprintf(errOut, "perfetto: %s: %d events from %d rank(s), %d late arrival(s) marked with %d flow(s) to waiting peers; open it in https://ui.perfetto.dev\n",
			o.Perfetto, stats.Events, stats.Ranks, stats.LateArrivals, stats.Flows)
	}
	return nil
}
