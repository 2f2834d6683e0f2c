package analyze

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/sql/duck"
)

// ReportOptions are 'trainscope report's flags.
type ReportOptions struct {
	DB, Steps   string
	Format, Out string
	Full        bool
	Config      string
	Threads     int
	Detectors   []string
}

// Report runs the detectors again on a database analyze --db wrote and
// writes the report: 'trainscope report'. args are what the flags left.
func Report(ctx context.Context, args []string, o ReportOptions, out, errOut io.Writer) error {
	if o.DB == "" {
		return cli.Usage("report: --db FILE is required (write one with 'trainscope analyze --db FILE')")
	}
	if len(args) > 0 {
		return cli.Usage(fmt.Sprintf("report: unexpected argument %q", args[0]))
	}
	if err := checkFormat("report", o.Format); err != nil {
		return err
	}
	window, err := stepsFlag("report", "--steps", o.Steps)
	if err != nil {
		return err
	}
	cfg, err := loadConfig("report", o.Config, o.Threads)
	if err != nil {
		return err
	}
	if _, err := os.Stat(o.DB); err != nil {
		return cli.Input(fmt.Errorf("report: %w", err))
	}
	cfg.Detectors.Dirs = append(cfg.Detectors.Dirs, o.Detectors...)
	set, err := detectors.NewSet(cfg.DetectorsConfig())
	if err != nil {
		return cli.Input(err)
	}
	set.Workers = cfg.Cores()
	st, err := duck.Open(ctx, o.DB, duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit, MaxConns: set.Workers})
	if err != nil {
		return err
	}
	defer st.Close()
	if n := hostRowsWithoutDerived(ctx, st); n > 0 {
		fmt.Fprintf(errOut, "warning: %s was written by an older trainscope: %d host slices have no call stack or GPU busy time, so host_exposed and runtime_api cannot measure them; run 'trainscope analyze --db' on the traces again\n", o.DB, n)
	}
	rep, err := detect(ctx, st, set, window, o.Steps, errOut)
	if err != nil {
		return err
	}
	return WriteReport(rep, o.Format, o.Full, o.Out, out)
}

// hostRowsWithoutDerived counts host slices that lack the columns readers
// derive since schema version 3 (stack_id, gpu_busy_dur): a database an
// older build wrote, whose exposure detectors would read them as empty.
func hostRowsWithoutDerived(ctx context.Context, st *duck.Store) int64 {
	var n int64
	err := st.Conn().QueryRowContext(ctx, `SELECT count(*) FROM slices_core
		WHERE kind IN ('runtime', 'driver', 'cpu_op', 'python', 'annotation') AND (gpu_busy_dur IS NULL OR stack_id IS NULL)`).Scan(&n)
	if err != nil {
		return 0
	}
	return n
}
