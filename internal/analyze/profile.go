package analyze

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/ingest/jsonscan"
	"github.com/trainscope/trainscope/ingest/kineto"
	"github.com/trainscope/trainscope/ingest/memsnap"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/sql/duck"
)

// ProfileOptions are 'trainscope profile's flags.
type ProfileOptions struct {
	Memory, Trace string // the snapshot and the trace of the same rank
	Format, Out   string
	Full          bool
	DB, Run, Host string
	Rank          int // -1: from the file name, else 0
	Config        string
	Threads       int
	Quiet         bool
}

// Profile reports on a CUDA memory snapshot and, with o.Trace, the trace
// of the same rank: 'trainscope profile'. args are what the flags left.
func Profile(ctx context.Context, args []string, o ProfileOptions, out, errOut io.Writer) error {
	if len(args) > 0 {
		return cli.Usage(fmt.Sprintf("profile: unexpected argument %q; name files with --memory and --trace", args[0]))
	}
	if o.Memory == "" && o.Trace == "" {
		return cli.Usage("profile: give --memory SNAPSHOT and/or --trace TRACE (see 'trainscope profile --help')")
	}
	if err := checkFormat("profile", o.Format); err != nil {
		return err
	}
	cfg, err := loadConfig("profile", o.Config, o.Threads)
	if err != nil {
		return err
	}
	set, err := detectors.NewSet(cfg.DetectorsConfig())
	if err != nil {
		return cli.Input(err)
	}
	set.Workers = cfg.Cores()
	runID := o.Run
	if runID == "" {
		first := o.Memory
		if first == "" {
			first = o.Trace
		}
		runID = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(first), ".gz"), ".json")
	}
	r := int32(0)
	switch {
	case o.Rank >= 0:
		r = int32(o.Rank)
	case o.Memory != "":
		if n, ok := kineto.RankFromName(o.Memory); ok {
			r = int32(n)
		}
	}
	st, err := duck.Open(ctx, o.DB, duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit, MaxConns: set.Workers})
	if err != nil {
		return err
	}
	defer st.Close()

	if o.Trace != "" {
		if _, err := ingest.Load(ctx, st, []string{o.Trace}, ingest.Options{RunID: runID, Host: o.Host, Rank: int(r), Workers: cfg.Cores(), Progress: progressTo(errOut, o.Quiet), Warn: cli.Warn(errOut), TracesOnly: true}); err != nil {
			return inputErr(err)
		}
	}
	if o.Memory != "" {
		snap, err := memsnap.ReadFile(o.Memory)
		if err != nil {
			var fe *jsonscan.FileError
			if errors.As(err, &fe) || errors.Is(err, os.ErrNotExist) {
				return cli.Input(err)
			}
			return err
		}
		if err := ingest.InsertSnapshot(ctx, st, snap, runID, o.Host, r, cli.Warn(errOut)); err != nil {
			return err
		}
		if o.Trace == "" {
			if err := st.Exec(ctx, `INSERT INTO ranks (run_id, rank, host, source, rank_source, events, json_bytes) VALUES (?, ?, ?, ?, 'snapshot', ?, ?)`,
				runID, r, o.Host, o.Memory, int64(snap.Segments.Len()+snap.Events.Len()), snap.JSONBytes); err != nil {
				return err
			}
		}
		if !o.Quiet {
			fmt.Fprintf(errOut, "%s: %d segments, %d blocks, %d trace entries, %.1f MB JSON\n", o.Memory,
				snap.Segments.Len(), snap.Blocks.Len(), snap.Events.Len(), float64(snap.JSONBytes)/1e6)
		}
	}
	rep, err := detect(ctx, st, set, detectors.Window{}, "", errOut)
	if err != nil {
		return err
	}
	return WriteReport(rep, o.Format, o.Full, o.Out, out)
}
