package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

const analyzeHelp = `Usage: trainscope analyze DIR_OR_FILES... [flags]

Reads PyTorch profiler (Kineto) traces, one file per rank (.json or .json.gz),
Nsight Systems SQLite exports (one trace per GPU), CUDA memory snapshots
(JSON), launch scripts (.sh, for the config audit) and saved dcgm-exporter
scrapes (.prom, into the counters table: host from the Hostname label,
device from gpu; the hardware detectors read them), loads them into
DuckDB, runs the built-in detectors and prints a report that fits one
screen: the verdict (the root cause that costs the most step time, with its
evidence), the root causes, the findings one line per detector in
PerfTracker's sections, and the top recommendations. --full adds every
metric table; the JSON and HTML reports (with charts) always hold them.

A file that cannot be read (a truncated or corrupt trace) ends the command
with exit status 2, naming it; --skip-bad instead leaves it out, and the
report says which files were skipped and why. Named pipes, sockets and
devices in a folder are skipped with a warning (never opened); given by
name, they are refused.

By default every ProfilerStep but the last is analysed (the last one is often
cut short), as Holistic Trace Analysis does. Hosts come from --host or from
a trace's own host_name metadata, never from a file name (tensorboard's
<worker>_<pid>.<ms> names a worker, not a machine); they place ranks on
nodes for slow_host and for the collectives' transport, which is
"unknown" while a host is.

Without --db, the bulk of the run (its slices and counters) is written
trace by trace as Parquet files to a folder in the system's temp folder
(TMPDIR), where the detectors read it; the folder is removed when the
command ends (if it is killed, by the next one). DuckDB keeps up to 512MB
of the other tables in memory (duckdb.memory_limit, or
TRAINSCOPE_DUCKDB_MEMORY_LIMIT=2GB, changes it), the rest in that folder
too. With --db and without duckdb.memory_limit, DuckDB gets 256MB while a
trace of some 300,000 events or more goes in.

Examples:
  trainscope analyze traces/                       # a folder of rank traces
  trainscope analyze traces/ --db run.duckdb       # keep the database for 'trainscope sql'
  trainscope analyze rank0.json.gz rank1.json.gz --steps 3-7 --format json
  trainscope analyze traces/ --format html -o report.html   # one page to share
  trainscope analyze traces/ -q --timing           # where the time goes, peak memory, slowest detectors
  trainscope analyze traces/ --archive /mnt/archive   # add the run to the fleet archive
  trainscope analyze traces/ --skip-bad            # a truncated rank is named in the report, the rest analysed

Flags:
`

func flagSet(name string, help string, errOut io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), help)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and turns --help and flag errors into the right
// exit codes.
func parseFlags(fs *pflag.FlagSet, args []string, out io.Writer) error {
	for _, a := range args {
		if a == "--help" || a == "-h" {
			fs.SetOutput(out)
			fs.Usage()
			return errHelp
		}
	}
	if err := fs.Parse(args); err != nil {
		return &usageError{err.Error()}
	}
	return nil
}

type analyzeFlags struct {
	format, db, parquet, archive, steps, ranks, run, host, out, config, gpu string
	rank, workers                                                           int
	threads                                                                 *int
	quiet, timing, full, skipBad                                            bool
	detectorDirs                                                            []string
}

// analyzeMemoryLimit is DuckDB's memory for analyze unless duckdb.memory_limit
// says otherwise; past it DuckDB keeps table blocks in a temp folder. Measured
// (bench/RESULTS.md): 1,024 small ranks peak at 1.10 GB instead of 2.52 GB
// for ~10% more time, a 1.5 GB single trace at 1.98 GB instead of 2.78 GB
// and faster (24 s, 31 s), syn8 unchanged; the reports are identical.
const analyzeMemoryLimit = "512MB"

// analyzeHugeTraceMemoryLimit is DuckDB's memory while the chunks of a
// trace too big for one batch go in, unless duckdb.memory_limit is set
// (ingest.Options.HugeTraceMemoryLimit): into a database file (--db), a
// 1.5 GB trace peaked at 1.00-1.02 GB with it, 1.09 GB without, in the
// same time. In memory the chunks' slices and counters are staged as
// Parquet files, and DuckDB takes little of them either way.
const analyzeHugeTraceMemoryLimit = "256MB"

func runAnalyze(ctx context.Context, args []string, out, errOut io.Writer) error {
	var f analyzeFlags
	fs := flagSet("analyze", analyzeHelp, errOut)
	fs.StringVar(&f.format, "format", "md", "report format: md, json or html (one self-contained page)")
	fs.BoolVar(&f.full, "full", false, fullHelp)
	fs.StringVar(&f.db, "db", "", "write the DuckDB database to this file (default: in memory, discarded)")
	fs.StringVar(&f.archive, "archive", "", "also add the run to this fleet archive, a folder or s3://bucket/prefix (as 'serve --archive' writes it)")
	fs.StringVar(&f.parquet, "parquet", "", "also export every table to this folder as hive-partitioned Parquet")
	fs.StringVar(&f.steps, "steps", "", "analyse these ProfilerSteps only, e.g. 3-7 or 5")
	fs.StringVar(&f.ranks, "ranks", "", "load these ranks only, e.g. 0,2 or 0-3")
	fs.StringVar(&f.run, "run", "", "run id (default: the name of the folder the traces are in)")
	fs.StringVar(&f.host, "host", "", "host name to record for these traces")
	fs.StringVar(&f.gpu, "gpu", "", "GPU model when the traces do not say (a catalog key: "+strings.Join(gpu.Keys(), ", ")+")")
	fs.IntVar(&f.rank, "rank", -1, "rank for a trace that names none in distributedInfo or its file name")
	fs.IntVar(&f.workers, "workers", 0, "files read in parallel (default: one per core)")
	fs.StringVarP(&f.out, "out", "o", "", "write the report to this file instead of stdout")
	fs.StringVar(&f.config, "config", "", "config file (YAML, TOML or JSON); also TRAINSCOPE_CONFIG")
	fs.StringArrayVar(&f.detectorDirs, "detectors", nil, "extra folder of .sql detectors (repeatable)")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no progress on stderr")
	fs.BoolVar(&f.skipBad, "skip-bad", false, "go on past a file that cannot be read (truncated, not a trace): the report names each one skipped and why")
	f.threads = threadsFlag(fs)
	fs.BoolVar(&f.timing, "timing", false, "print a per-phase timing line with the peak memory, and the slowest detectors and shared views, on stderr")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return &usageError{"analyze: give trace files or folders (see 'trainscope analyze --help')"}
	}
	if err := checkReportFormat("analyze", f.format); err != nil {
		return err
	}
	if f.gpu != "" {
		if _, ok := gpu.Lookup(f.gpu); !ok {
			return &usageError{fmt.Sprintf("analyze: --gpu %q is not in the GPU catalog (known: %s)", f.gpu, strings.Join(gpu.Keys(), ", "))}
		}
	}
	if f.run != "" {
		if err := stream.CheckRunID(f.run); err != nil {
			return &usageError{"analyze: --run: " + err.Error()}
		}
	}
	window, err := parseSteps(f.steps)
	if err != nil {
		return &usageError{"analyze: --steps: " + err.Error()}
	}
	ranks, err := parseRanks(f.ranks)
	if err != nil {
		return &usageError{"analyze: --ranks: " + err.Error()}
	}
	cfg, err := loadConfig(f.config)
	if err != nil {
		return err
	}
	if err := cfg.applyThreads("analyze", *f.threads); err != nil {
		return err
	}
	cfg.Detectors.Dirs = append(cfg.Detectors.Dirs, f.detectorDirs...)
	set, err := detectors.NewSet(cfg.DetectorsConfig())
	var slowest []timedStep
	if err == nil && f.timing {
		set.Timed = func(what string, took time.Duration) { slowest = append(slowest, timedStep{what, took}) }
	}
	if err != nil {
		return &inputError{err}
	}
	// detectors run side by side on their own connections, one per core
	set.Workers = cfg.Cores()
	files, err := ingest.DiscoverWith(fs.Args(), warnTo(errOut))
	if err != nil {
		return &inputError{err}
	}

	if os.Getenv("GOGC") == "" {
		// Parsed traces are short-lived and large; a tight GC target
		// trims peak memory at no measurable cost: 50 took ~15% off an
		// 8-rank load, 25 another 10 MB of syn8's ~275 MB and 0.17 GB of a
		// 3 GB trace's 1.33 GB (bench/RESULTS.md). The columns that make
		// up most of the heap hold no pointers, so collecting often is
		// cheap.
		debug.SetGCPercent(25)
	}
	t0 := time.Now()
	memLimit := cfg.DuckDB.MemoryLimit
	if memLimit == "" {
		memLimit = analyzeMemoryLimit
	}
	threads := cfg.DuckDB.Threads
	if threads == 0 {
		// while the traces load, the readers need the cores: one DuckDB
		// thread inserts (syn8: load 2.75-2.85 s against 3.5 s with two
		// threads, whole run 4.34-4.45 s against 4.97-5.30 s)
		threads = 1
	}
	// In memory, the bulk of a run, its slices and counters, is staged:
	// arrow-go writes it trace by trace as Parquet files to the store's
	// temporary folder, where the detectors read it, instead of DuckDB
	// appending it (syn8: ~2 s of DuckDB's time, and ~75 MB of
	// compressed tables). syn8's load took 1.2 s instead of 2.3-2.5 s,
	// the run 2.3-2.4 s instead of 3.3-3.6 s, its peak 228-235 MB
	// instead of 260-269 MB, with the same report; the detectors read the
	// files a little slower (1.1 s against 0.9 s). A 3 GB single trace:
	// 28.6 s instead of 32.7 s (bench/RESULTS.md, "analyze stages its
	// rows as Parquet").
	st, err := duck.Open(ctx, f.db, duck.Options{Threads: threads, MemoryLimit: memLimit, Staged: f.db == "", MaxConns: set.Workers})
	if err != nil {
		return err
	}
	defer st.Close()
	var progress io.Writer
	if !f.quiet {
		progress = errOut
	}
	loadOpt := ingest.Options{RunID: f.run, Host: f.host, Rank: f.rank, Ranks: ranks, Workers: cmp.Or(f.workers, cfg.Cores()), Progress: progress, GPU: f.gpu, Warn: warnTo(errOut), SkipBad: f.skipBad}
	if cfg.DuckDB.MemoryLimit == "" {
		loadOpt.HugeTraceMemoryLimit = analyzeHugeTraceMemoryLimit
	}
	// one reader a core, as many as a quarter of the memory holds
	loadOpt.MemoryBudget = config.MachineMemory() / 4
	stats, err := ingest.Load(ctx, st, files, loadOpt)
	if err != nil {
		if ingest.IsInputError(err) {
			return &inputError{err}
		}
		return err
	}
	// Nothing but these traces goes into this store: its views can read
	// the staged files without uniting their columns at every query.
	if err := st.Seal(ctx); err != nil {
		return err
	}
	// The traces' Go memory is garbage now; hand it back to the system
	// before DuckDB's detectors need theirs, so the two do not add up.
	debug.FreeOSMemory()
	if cfg.DuckDB.Threads == 0 {
		// the shared views and the detectors have the cores to themselves
		if err := st.Exec(ctx, fmt.Sprintf("SET threads = %d", cfg.DuckThreads())); err != nil {
			return err
		}
	}
	tLoad := time.Now()
	if progress != nil {
		set.Progress = detectorProgress(progress, len(set.Detectors), min(set.Workers, len(set.Detectors)), time.Now)
	}
	rep, err := detect(ctx, st, set, window, f.steps, errOut)
	if err != nil {
		return err
	}
	noteSkipped(rep, stats)
	tDetect := time.Now()
	if f.parquet != "" {
		if err := st.ExportParquet(ctx, f.parquet); err != nil {
			return err
		}
	}
	if f.archive != "" {
		cfg.Serve.Archive = f.archive
		if err := archiveRuns(ctx, cfg, st, errOut, f.quiet); err != nil {
			return err
		}
	}
	if err := writeReport(rep, f.format, f.full, f.out, out); err != nil {
		return err
	}
	if f.timing {
		fmt.Fprintf(errOut, "timing: load %s (read %s cpu over %d files, insert %s), detectors %s, report %s; %d events, %.1f MB JSON",
			tLoad.Sub(t0).Round(time.Millisecond), stats.ReadCPU.Round(time.Millisecond), len(files),
			stats.Insert.Round(time.Millisecond), tDetect.Sub(tLoad).Round(time.Millisecond),
			time.Since(tDetect).Round(time.Millisecond), stats.Events, float64(stats.JSONBytes)/1e6)
		if peak, ok := peakMemory(); ok {
			fmt.Fprintf(errOut, "; peak memory %d MB", peak>>20)
		}
		fmt.Fprintln(errOut)
		printSlowest(errOut, slowest, 12)
	}
	if !f.quiet {
		if f.out != "" {
			fmt.Fprintf(errOut, "report: %s\n", f.out)
		}
		if f.db != "" {
			fmt.Fprintf(errOut, "database: %s (query it: trainscope sql --db %s \"SELECT * FROM findings\")\n", f.db, f.db)
		}
		if f.parquet != "" {
			fmt.Fprintf(errOut, "parquet: %s\n", f.parquet)
		}
	}
	return nil
}

// noteSkipped says in the report which files --skip-bad left out and why:
// data that will never be in it.
func noteSkipped(rep *detectors.Report, stats *ingest.Stats) {
	bad := stats.Bad()
	if len(bad) == 0 {
		return
	}
	if rep.Status == nil {
		rep.Status = &detectors.RunStatus{}
	}
	for _, f := range bad {
		rep.Status.Missing = append(rep.Status.Missing, fmt.Sprintf("skipped %s (%s)", f.Path, f.Skipped))
	}
}

// detectorProgress says on w that the detectors start, then how many are
// done at most once a second (now is the clock), and when all are.
func detectorProgress(w io.Writer, n, workers int, now func() time.Time) func(done, total int) {
	fmt.Fprintf(w, "running %d detectors, up to %d at a time\n", n, workers)
	start := now()
	last := start
	return func(done, total int) {
		t := now()
		switch {
		case done == total:
			fmt.Fprintf(w, "detectors: %d of %d done in %s\n", done, total, t.Sub(start).Round(time.Millisecond))
		case t.Sub(last) >= time.Second:
			last = t
			fmt.Fprintf(w, "detectors: %d of %d done\n", done, total)
		}
	}
}

// parseSteps reads "3-7" or "5".
func parseSteps(s string) (detectors.Window, error) {
	if s == "" {
		return detectors.Window{}, nil
	}
	lo, hi, found := strings.Cut(s, "-")
	a, err := strconv.Atoi(strings.TrimSpace(lo))
	if err != nil {
		return detectors.Window{}, fmt.Errorf("%q: want N or N-M", s)
	}
	b := a
	if found {
		if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil {
			return detectors.Window{}, fmt.Errorf("%q: want N or N-M", s)
		}
	}
	if b < a {
		return detectors.Window{}, fmt.Errorf("%q: the range ends before it starts", s)
	}
	return detectors.Window{StepLo: a, StepHi: b, Set: true}, nil
}

// parseRanks reads "0,2,5-7".
func parseRanks(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, found := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%q: want ranks like 0,2 or 0-3", s)
		}
		b := a
		if found {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("%q: want ranks like 0,2 or 0-3", s)
			}
		}
		for r := a; r <= b; r++ {
			out = append(out, r)
		}
	}
	return out, nil
}

// checkSteps refuses a --steps range that holds none of the traces' steps,
// naming the steps they do have, rather than printing an empty report.
func checkSteps(ctx context.Context, st *duck.Store, spec string) error {
	var inWindow int
	var have sql.NullString
	err := st.Conn().QueryRowContext(ctx, `
SELECT (SELECT count(*) FROM steps s JOIN analysis_window w USING (run_id, rank) WHERE s.step BETWEEN w.step_lo AND w.step_hi),
       (SELECT string_agg(DISTINCT step::VARCHAR, ', ' ORDER BY step::VARCHAR) FROM steps)`).Scan(&inWindow, &have)
	if err != nil {
		return err
	}
	if inWindow > 0 {
		return nil
	}
	if !have.Valid {
		return &inputError{fmt.Errorf("--steps %s: the traces have no ProfilerStep ranges; drop --steps to analyse them whole", spec)}
	}
	return &inputError{fmt.Errorf("--steps %s: no trace has those steps; they have steps %s", spec, have.String)}
}

// timedStep is how long one detector or shared view took.
type timedStep struct {
	what string
	took time.Duration
}

// printSlowest lists the n slowest steps of a detector pass and their sum.
// printSlowest lists the n slowest of steps. Detectors that ran side by
// side each count their own time, so the total can exceed the wall time.
func printSlowest(w io.Writer, steps []timedStep, n int) {
	var total time.Duration
	for _, s := range steps {
		total += s.took
	}
	slices.SortStableFunc(steps, func(a, b timedStep) int { return cmp.Compare(b.took, a.took) })
	fmt.Fprintf(w, "timing: %d detectors and shared views, %s in all (detectors side by side each count their own time); slowest:", len(steps), total.Round(time.Millisecond))
	for i, s := range steps[:min(n, len(steps))] {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(w, "%s %s %s", sep, s.what, s.took.Round(time.Millisecond))
	}
	fmt.Fprintln(w)
}
