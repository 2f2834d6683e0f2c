package analyze

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/sql/duck"
)

// Options are 'trainscope analyze's flags.
type Options struct {
	Format, Out string   // the report: md, json or html; a file, or stdout
	Full        bool     // markdown: every metric table and finding
	DB          string   // the database file (default: in memory)
	Parquet     string   // also export every table here
	Archive     string   // also add the run to this fleet archive
	Steps       string   // ProfilerSteps to analyse, "3-7" or "5"
	Ranks       string   // ranks to load, "0,2" or "0-3"
	Run, Host   string   // run id and host name to record
	GPU         string   // GPU model when the traces do not say
	Rank        int      // rank for a trace that names none (-1: none)
	Workers     int      // files read in parallel (0: one per core)
	ReadMemory  string   // --read-memory: what traces read at once may hold ("": the read_memory key)
	Config      string   // config file
	Threads     int      // --threads (0: the threads key)
	Detectors   []string // extra folders of .sql detectors
	Quiet       bool     // no progress on stderr
	Timing      bool     // the timing line and the slowest detectors
	SkipBad     bool     // go on past a file that cannot be read
	// UntracedStep is the step time without the profiler, from the user's
	// training log (0: not known): the verdict takes the traced step less
	// it off the host-side causes as the profiler's own cost
	UntracedStep time.Duration
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

// detectThreadMemory is the share of DuckDB's memory limit each of its
// threads gets while the detectors run (detectThreads). Each running
// query keeps intermediates a thread, outside the blocks the limit
// counts: syn8's detectors peaked at ~175 MB with one thread, ~290 MB with
// 16 and ~355 MB with 64 (2 cores, bench/RESULTS.md), where on a 16-core
// machine they took no less time with 16 threads than with 8 (syn8 0.97
// against 0.91 s, r512 2.93 against 2.72 s).
const detectThreadMemory = 64_000_000 // 64MB, as DuckDB counts a limit of 512MB

// detectThreads is DuckDB's threads for the detectors: cores, no more
// than memLimit (DuckDB's memory limit, "512MB") holds at
// detectThreadMemory a thread: 8 with analyze's default 512MB, 31 with
// 2GB. duckdb.threads, when set, is used as it is instead.
func detectThreads(cores int, memLimit string) int {
	limit, err := config.ParseSize(memLimit)
	if err != nil {
		return cores // a limit DuckDB took but ParseSize does not read: no cap
	}
	return max(1, min(cores, int(limit/detectThreadMemory)))
}

// Run analyses the traces and other files at paths (files or folders)
// and writes the report: 'trainscope analyze'.
func Run(ctx context.Context, paths []string, o Options, out, errOut io.Writer) error {
	if err := checkFormat("analyze", o.Format); err != nil {
		return err
	}
	if o.GPU != "" {
		if _, ok := gpu.Lookup(o.GPU); !ok {
			return cli.Usage(fmt.Sprintf("analyze: --gpu %q is not in the GPU catalog (known: %s)", o.GPU, strings.Join(gpu.Keys(), ", ")))
		}
	}
	window, ranks, err := selection("analyze", o.Run, o.Steps, o.Ranks)
	if err != nil {
		return err
	}
	cfg, err := loadConfig("analyze", o.Config, o.Threads)
	if err != nil {
		return err
	}
	if o.ReadMemory != "" {
		if _, err := config.ParseSize(o.ReadMemory); err != nil {
			return cli.Usage("analyze: --read-memory: " + err.Error())
		}
		cfg.ReadMemory = o.ReadMemory
	}
	cfg.Detectors.Dirs = append(cfg.Detectors.Dirs, o.Detectors...)
	if o.UntracedStep < 0 {
		return cli.Usage(fmt.Sprintf("analyze: --untraced-step %s: want a step time, e.g. 29.3ms", o.UntracedStep))
	}
	if o.UntracedStep > 0 {
		cfg.Causes.UntracedStepNS = float64(o.UntracedStep)
	}
	set, err := detectors.NewSet(cfg.DetectorsConfig())
	var slowest []timedStep
	var planned plannedSum
	if err == nil && o.Timing {
		set.Timed = func(what string, took time.Duration) { slowest = append(slowest, timedStep{what, took}) }
		set.Planned = planned.add
	}
	if err != nil {
		return cli.Input(err)
	}
	memLimit := cmp.Or(cfg.DuckDB.MemoryLimit, analyzeMemoryLimit)
	detectDuck := cfg.DuckThreads()
	if cfg.DuckDB.Threads == 0 {
		detectDuck = detectThreads(detectDuck, memLimit)
	}
	// detectors run side by side on their own connections, one per core,
	// no more than twice DuckDB's threads: past that a query only waits
	// for a thread, holding its state (syn8 at --threads 64 peaked at
	// 300-340 MB with 64 side by side on 8 DuckDB threads)
	set.Workers = min(cfg.Cores(), 2*detectDuck)
	// without --db the store is gone with the command: no SQL client
	// will read the metric tables' comments
	set.Uncommented = o.DB == ""
	files, err := ingest.DiscoverWith(paths, cli.Warn(errOut))
	if err != nil {
		return cli.Input(err)
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
	st, err := duck.Open(ctx, o.DB, duck.Options{Threads: threads, MemoryLimit: memLimit, Staged: o.DB == "", MaxConns: set.Workers})
	if err != nil {
		return err
	}
	defer st.Close()
	progress := progressTo(errOut, o.Quiet)
	loadOpt := ingest.Options{RunID: o.Run, Host: o.Host, Rank: o.Rank, Ranks: ranks, Workers: cmp.Or(o.Workers, cfg.Cores()), Progress: progress, GPU: o.GPU, Warn: cli.Warn(errOut), SkipBad: o.SkipBad}
	if cfg.DuckDB.MemoryLimit == "" {
		loadOpt.HugeTraceMemoryLimit = analyzeHugeTraceMemoryLimit
	}
	// one reader a core, as many as a quarter of the memory holds, and
	// no more traces at once than the read budget holds
	loadOpt.MemoryBudget = config.MachineMemory() / 4
	loadOpt.ReadMemory = cfg.ReadMemoryBytes()
	stats, err := ingest.Load(ctx, st, files, loadOpt)
	if err != nil {
		return inputErr(err)
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
		// the shared views and the detectors have the cores to themselves,
		// as many as DuckDB's memory holds (detectThreads)
		if err := st.Exec(ctx, fmt.Sprintf("SET threads = %d", detectDuck)); err != nil {
			return err
		}
	}
	tLoad := time.Now()
	if progress != nil {
		set.Progress = detectorProgress(progress, len(set.Detectors), min(set.Workers, len(set.Detectors)), time.Now)
	}
	rep, err := detect(ctx, st, set, window, o.Steps, errOut)
	if err != nil {
		return err
	}
	noteSkipped(rep, stats)
	tDetect := time.Now()
	if o.Parquet != "" {
		if err := st.ExportParquet(ctx, o.Parquet); err != nil {
			return err
		}
	}
	if o.Archive != "" {
		cfg.Serve.Archive = o.Archive
		if err := archiveRuns(ctx, cfg, st, errOut, o.Quiet); err != nil {
			return err
		}
	}
	if err := WriteReport(rep, o.Format, o.Full, o.Out, out); err != nil {
		return err
	}
	if o.Timing {
		fmt.Fprintf(errOut, "timing: load %s (read %s cpu over %d files, insert %s), detectors %s, report %s; %d events, %.1f MB JSON",
			tLoad.Sub(t0).Round(time.Millisecond), stats.ReadCPU.Round(time.Millisecond), len(files),
			stats.Insert.Round(time.Millisecond), tDetect.Sub(tLoad).Round(time.Millisecond),
			time.Since(tDetect).Round(time.Millisecond), stats.Events, float64(stats.JSONBytes)/1e6)
		if peak, ok := peakMemory(); ok {
			fmt.Fprintf(errOut, "; peak memory %d MB", peak>>20)
		}
		fmt.Fprintln(errOut)
		printSlowest(errOut, slowest, 12)
		planned.print(errOut)
	}
	if !o.Quiet {
		if o.Out != "" {
			fmt.Fprintf(errOut, "report: %s\n", o.Out)
		}
		if o.DB != "" {
			fmt.Fprintf(errOut, "database: %s (query it: trainscope sql --db %s \"SELECT * FROM findings\")\n", o.DB, o.DB)
		}
		if o.Parquet != "" {
			fmt.Fprintf(errOut, "parquet: %s\n", o.Parquet)
		}
	}
	return nil
}

// loadConfig is config.Load for command cmd with its --threads value (0:
// not given) applied.
func loadConfig(cmd, path string, threads int) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	if err := cli.ApplyThreads(cfg, cmd, threads); err != nil {
		return nil, err
	}
	return cfg, nil
}

// progressTo is where progress goes: errOut, or nowhere when quiet.
func progressTo(errOut io.Writer, quiet bool) io.Writer {
	if quiet {
		return nil
	}
	return errOut
}

// inputErr is a loader's error, marked as bad input when a file could
// not be read.
func inputErr(err error) error {
	if ingest.IsInputError(err) {
		return cli.Input(err)
	}
	return err
}

// noteSkipped says in the report which files --skip-bad left out and why:
// data that will never be in it.
func noteSkipped(rep *report.Report, stats *ingest.Stats) {
	bad := stats.Bad()
	if len(bad) == 0 {
		return
	}
	if rep.Status == nil {
		rep.Status = &report.RunStatus{}
	}
	for _, f := range bad {
		rep.Status.Missing = append(rep.Status.Missing, fmt.Sprintf("skipped %s (%s)", f.Path, f.Skipped))
	}
}
