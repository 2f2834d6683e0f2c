package main

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
	"github.com/trainscope/trainscope/sql/duck"
)

const profileHelp = `Usage: trainscope profile --memory SNAPSHOT.json[.gz] [--trace TRACE.json[.gz]] [flags]

Reports on a CUDA caching-allocator snapshot (the JSON that
torch.cuda.memory._snapshot() returns): reserved, allocated, active and
requested memory per device, fragmentation, rounding waste, the largest
segments, allocator action counts, the allocation sites that asked for the
most, and out-of-memory events. With --trace, the profiler trace of the same
rank is analysed too, into the same report.

A pickle (torch.cuda.memory._dump_snapshot) is never deserialized; the error
says how to export JSON instead. Only the files named here are read.

Flags:
`

func runProfile(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flagSet("profile", profileHelp, errOut)
	memPath := fs.String("memory", "", "memory snapshot (JSON or JSON.gz)")
	tracePath := fs.String("trace", "", "PyTorch profiler trace of the same rank")
	format := fs.String("format", "md", "report format: md, json or html (one self-contained page)")
	full := fs.Bool("full", false, fullHelp)
	outPath := fs.StringP("out", "o", "", "write the report to this file instead of stdout")
	db := fs.String("db", "", "write the DuckDB database to this file")
	run := fs.String("run", "", "run id (default: the snapshot's file name)")
	host := fs.String("host", "", "host name to record")
	rank := fs.Int("rank", -1, "rank (default: from the file name, else 0)")
	config := fs.String("config", "", "config file (YAML, TOML or JSON); also TRAINSCOPE_CONFIG")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	threads := threadsFlag(fs)
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("profile: unexpected argument %q; name files with --memory and --trace", fs.Arg(0))}
	}
	if *memPath == "" && *tracePath == "" {
		return &usageError{"profile: give --memory SNAPSHOT and/or --trace TRACE (see 'trainscope profile --help')"}
	}
	if err := checkReportFormat("profile", *format); err != nil {
		return err
	}
	cfg, err := loadConfig(*config)
	if err != nil {
		return err
	}
	if err := cfg.applyThreads("profile", *threads); err != nil {
		return err
	}
	set, err := detectors.NewSet(cfg.DetectorsConfig())
	if err != nil {
		return &inputError{err}
	}
	set.Workers = cfg.Cores()
	runID := *run
	if runID == "" {
		first := *memPath
		if first == "" {
			first = *tracePath
		}
		runID = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(first), ".gz"), ".json")
	}
	r := int32(0)
	switch {
	case *rank >= 0:
		r = int32(*rank)
	case *memPath != "":
		if n, ok := kineto.RankFromName(*memPath); ok {
			r = int32(n)
		}
	}
	st, err := duck.Open(ctx, *db, duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit, MaxConns: set.Workers})
	if err != nil {
		return err
	}
	defer st.Close()

	if *tracePath != "" {
		var progress io.Writer
		if !*quiet {
			progress = errOut
		}
		if _, err := ingest.Load(ctx, st, []string{*tracePath}, ingest.Options{RunID: runID, Host: *host, Rank: int(r), Workers: cfg.Cores(), Progress: progress, Warn: warnTo(errOut), TracesOnly: true}); err != nil {
			if ingest.IsInputError(err) {
				return &inputError{err}
			}
			return err
		}
	}
	if *memPath != "" {
		snap, err := memsnap.ReadFile(*memPath)
		if err != nil {
			var fe *jsonscan.FileError
			if errors.As(err, &fe) || errors.Is(err, os.ErrNotExist) {
				return &inputError{err}
			}
			return err
		}
		if err := ingest.InsertSnapshot(ctx, st, snap, runID, *host, r, warnTo(errOut)); err != nil {
			return err
		}
		if *tracePath == "" {
			if err := st.Exec(ctx, `INSERT INTO ranks (run_id, rank, host, source, rank_source, events, json_bytes) VALUES (?, ?, ?, ?, 'snapshot', ?, ?)`,
				runID, r, *host, *memPath, int64(snap.Segments.Len()+snap.Events.Len()), snap.JSONBytes); err != nil {
				return err
			}
		}
		if !*quiet {
			fmt.Fprintf(errOut, "%s: %d segments, %d blocks, %d trace entries, %.1f MB JSON\n", *memPath,
				snap.Segments.Len(), snap.Blocks.Len(), snap.Events.Len(), float64(snap.JSONBytes)/1e6)
		}
	}
	rep, err := detect(ctx, st, set, detectors.Window{}, "", errOut)
	if err != nil {
		return err
	}
	return writeReport(rep, *format, *full, *outPath, out)
}
