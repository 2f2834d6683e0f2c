package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trainscope/trainscope/ingest/jsonscan"

	"github.com/trainscope/trainscope/ingest/kineto"
	"github.com/trainscope/trainscope/ingest/memsnap"
	"github.com/trainscope/trainscope/ingest/nsys"
	"github.com/trainscope/trainscope/ingest/trace"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// Options tune Load.
type Options struct {
	RunID string // default: derived from the paths
	Host  string
	// Rank is given to a trace that names no rank in distributedInfo or its
	// file name; -1 numbers such traces in file order after the known ranks.
	Rank int
	// Ranks keeps only these ranks (nil keeps all).
	Ranks []int
	// Workers reading files in parallel, and staged files written at
	// once; 0 means GOMAXPROCS.
	Workers int
	// Progress receives one line per file; nil is silent.
	Progress io.Writer
	// GPU is the GPU model of traces that do not say (no
	// deviceProperties): a catalog key such as H100-SXM or a device name.
	GPU string
	// TracesOnly refuses a memory snapshot among the files (a command that
	// takes snapshots separately, like profile --memory, would otherwise
	// add it to the same device twice).
	TracesOnly bool
	// Warn hears of each problem in the input that was repaired rather
	// than refused (text that is not UTF-8, a string cut to its length
	// limit), with the file; nil is silent. Unlike Progress it is meant to
	// be shown even when a user asks for quiet.
	Warn func(string)
	// MemoryBudget, when > 0, bounds the memory the traces being read hold
	// at once, in bytes: fewer than Workers files are read at once when
	// Workers+1 traces of the largest file's size (traceMemory's estimate)
	// would pass it. A 192-core server reading 128 ranks of 1 GB traces
	// would otherwise hold ~40 GB of parsed traces.
	MemoryBudget int64
	// ReadMemory bounds, in bytes, what the traces in flight (being read,
	// waiting for the inserter, going in) are estimated to hold at once
	// (readPeak: ~0.6 bytes per byte of JSON): a reader takes a file's
	// share before it opens it and the inserter gives it back. Without it
	// the traces read at once grow with Workers, one per core: syn8's 8
	// ranks held ~35 MB each. 0 is room for readBigTraces of the largest
	// traces, at least defaultReadMemory (128 MB), within MemoryBudget;
	// < 0 is no bound.
	ReadMemory int64
	// HugeTraceMemoryLimit is DuckDB's memory limit (such as "256MB")
	// while the chunks of a trace too big for one batch go in; "" keeps
	// the store's. Such a trace outgrows the pool anyway, and while its
	// chunks go in, the Go records still waiting sit beside the pool: a
	// smaller pool keeps the two from adding up.
	HugeTraceMemoryLimit string
	// SkipBad goes on past a file that cannot be read (truncated, not a
	// trace, unreadable): Read records it in Stats.Files (Skipped says
	// why, Err is the error), tells Warn, and reads the rest. Without it
	// the first such file ends the read with its error. A load that is
	// left with nothing is still an InputError.
	SkipBad bool
}

func (opt Options) warn(line string) {
	if opt.Warn != nil {
		opt.Warn(line)
	}
}

// Stats describe a load.
type Stats struct {
	Files     []FileStat
	Events    int64
	Slices    int64
	JSONBytes int64
	ReadCPU   time.Duration // summed over workers: decompress + parse
	Insert    time.Duration // time inserting into DuckDB
	Wall      time.Duration
}

// FileStat describes one loaded file.
type FileStat struct {
	Path      string
	Format    trace.Format
	Rank      int32
	Events    int
	Slices    int
	JSONBytes int64
	Read      time.Duration
	Skipped   string // why the file was not loaded, when it was not
	// Err is the error reading the file, when Options.SkipBad skipped it
	// (Skipped is its text, without the path).
	Err error
}

// Bad are the files Options.SkipBad skipped: those that could not be read.
func (s *Stats) Bad() []FileStat {
	var bad []FileStat
	for _, f := range s.Files {
		if f.Err != nil {
			bad = append(bad, f)
		}
	}
	return bad
}

// DefaultRunID derives a run id from the paths a user gave: the name of the
// single folder, else of the common parent folder, else "run".
func DefaultRunID(paths []string) string {
	if len(paths) == 1 {
		if st, err := os.Stat(paths[0]); err == nil && st.IsDir() {
			if abs, err := filepath.Abs(paths[0]); err == nil {
				return cutRunID(filepath.Base(abs))
			}
		}
	}
	dir := ""
	for i, p := range paths {
		d, _ := filepath.Abs(filepath.Dir(p))
		if i == 0 {
			dir = d
		} else if d != dir {
			return "run"
		}
	}
	if dir == "" || dir == "/" || dir == "." {
		return "run"
	}
	return cutRunID(filepath.Base(dir))
}

// cutRunID keeps a folder name within stream.MaxRunIDBytes, valid UTF-8.
func cutRunID(name string) string {
	name = strings.ToValidUTF8(name, "_")
	if len(name) <= stream.MaxRunIDBytes {
		return name
	}
	cut := stream.MaxRunIDBytes
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut]
}

type readResult struct {
	idx  int
	got  *Loaded
	err  error
	took time.Duration
}

// twoPassBytes is the JSON size from which a trace is read in two passes
// (kineto.ReadFileTwoPass), its rows inserted chunk by chunk instead of
// held whole. Reading twice costs a parse; holding a trace whole costs
// ~130 bytes a row before it goes in. Measured (bench/RESULTS.md, "Big
// traces read in two passes"): a 1.53 GB trace peaked at 1.06 GB whole,
// 0.77 GB in two passes; a 0.52 GB trace at 0.64-0.67 GB either way (the
// detectors' DuckDB is its peak), its load 0.3-1.2 s slower in two.
var twoPassBytes int64 = 768 << 20

// checkFile is what Read checks of a file before a reader opens it:
// checkRegular (a variable for tests, where one that blocks stands for a
// read stuck on a hung mount).
var checkFile = checkRegular

// twoPassChunkRows is the rows of each chunk of such a read (0: the
// reader's 256K; a variable for tests).
var twoPassChunkRows int

// Load reads files with Read and inserts them into st, then
// records the run. A run of the same id already in st is replaced.
func Load(ctx context.Context, st *duck.Store, files []string, opt Options) (*Stats, error) {
	if opt.RunID == "" {
		opt.RunID = DefaultRunID(files)
	}
	had, err := st.DeleteRun(ctx, opt.RunID)
	if err != nil {
		return nil, err
	}
	if had && opt.Progress != nil {
		fmt.Fprintf(opt.Progress, "replacing run %s already in the database\n", opt.RunID)
	}
	sink := newBufferedSink(st, flushRows(st))
	sink.hugeLimit = opt.HugeTraceMemoryLimit
	sink.writers = opt.Workers
	stats, err := Read(ctx, sink, files, opt)
	if err != nil {
		sink.Flush(context.WithoutCancel(ctx)) // releases what waits; the load failed anyway
		return stats, err
	}
	t0 := time.Now()
	err = sink.Flush(ctx)
	if err == nil {
		err = RefreshRuns(ctx, st, opt.RunID)
	}
	stats.Insert += time.Since(t0)
	return stats, err
}

// Read reads each file with the Reader that Sniff picks for it (formats.go)
// and hands their batches to sink, trace by trace: the path both analyze
// (a store) and publish (JetStream) take. Traces get their ranks here;
// memory snapshots go in after them; side files (launch scripts, scrapes,
// ncu exports) join the run whole.
func Read(ctx context.Context, sink Sink, files []string, opt Options) (*Stats, error) {
	start := time.Now()
	if opt.RunID == "" {
		opt.RunID = DefaultRunID(files)
	}
	workers := readers(files, opt)
	shares, budget := readShares(files, opt)
	var room *readBudget
	if shares != nil {
		room = newReadBudget(budget)
		noteReadBudget(opt, shares, budget, workers)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	// Unbuffered: a worker holds its finished trace until the inserter takes
	// it, so at most workers+1 traces are in memory at once.
	results := make(chan readResult)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				t0 := time.Now()
				var got *Loaded
				err := checkFile(files[i]) // a pipe is never opened: it would block
				if err == nil {
					got, err = readFile(ctx, files[i], ReadOptions{Options: opt, NoPrefetch: len(files) >= 2*workers})
				}
				select {
				case results <- readResult{idx: i, got: got, err: err, took: time.Since(t0)}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range files {
			if room != nil && room.take(ctx, shares[i]) != nil {
				return
			}
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	stats := &Stats{Files: make([]FileStat, len(files))}
	keep := map[int]bool{}
	for _, r := range opt.Ranks {
		keep[r] = true
	}
	taken := map[int32]string{}
	snapRanks := map[int32]*memsnap.Snapshot{}
	var unranked []*trace.Trace
	done, sideFiles := 0, 0 // launch scripts and scrapes: a run of only these still loads
	held := int64(0)        // the read budget's share of the result last handled
	for {
		if held > 0 {
			// the inserter is done with the last result: its memory is
			// garbage (an unranked trace waits for its rank below, outside
			// the budget)
			room.give(held)
			held = 0
		}
		var res readResult
		var more bool
		// A reader stuck in a read that ignores ctx (a file on a hung
		// mount) must not keep a cancelled Read waiting.
		select {
		case res, more = <-results:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !more {
			break
		}
		if room != nil {
			held = shares[res.idx]
		}
		if res.err != nil {
			if !opt.SkipBad || ctx.Err() != nil {
				return nil, res.err
			}
			done++
			fs := &stats.Files[res.idx]
			*fs = FileStat{Path: files[res.idx], Rank: -1, Read: res.took, Skipped: badReason(files[res.idx], res.err), Err: res.err}
			stats.ReadCPU += res.took
			opt.warn(fmt.Sprintf("skipping %s: %s", fs.Path, fs.Skipped))
			continue
		}
		done++
		// side files: launch scripts, scrapes and ncu exports join the run
		// whole, with no rank of their own
		if sf := res.got.Side; sf != nil {
			side := &FileStat{Path: sf.Path, Format: sf.Format, Events: sf.Events}
			bs, notes := sf.Batches(opt.RunID, opt.Host)
			side.Rank, side.Read = -1, res.took
			stats.Files[res.idx] = *side
			stats.ReadCPU += res.took
			for _, n := range notes {
				opt.warn(side.Path + ": " + n)
			}
			t0 := time.Now()
			err := Send(ctx, sink, side.Path, bs, opt.warn)
			stats.Insert += time.Since(t0)
			if err != nil {
				return nil, err
			}
			sideFiles++
			progress(opt.Progress, done, len(files), &stats.Files[res.idx])
			continue
		}
		if snap := res.got.Snapshot; snap != nil {
			rank := snapshotRank(snap.Path, opt.Rank)
			fs := &stats.Files[res.idx]
			*fs = FileStat{Path: snap.Path, Format: "memory_snapshot", Rank: rank,
				Events: snap.Segments.Len() + snap.Events.Len(), JSONBytes: snap.JSONBytes, Read: res.took}
			stats.ReadCPU += res.took
			stats.JSONBytes += snap.JSONBytes
			if len(keep) > 0 && !keep[int(rank)] {
				fs.Skipped = fmt.Sprintf("rank %d is not in --ranks", rank)
			} else {
				snapRanks[rank] = snap
			}
			progress(opt.Progress, done, len(files), fs)
			continue
		}
		stats.ReadCPU += res.took
		for k, tr := range res.got.Traces {
			for _, note := range tr.Notes {
				opt.warn(tr.Path + ": " + note)
			}
			fs := &stats.Files[res.idx]
			if k > 0 { // one FileStat per trace: an nsys export holds one per GPU
				stats.Files = append(stats.Files, FileStat{})
				fs = &stats.Files[len(stats.Files)-1]
			}
			*fs = FileStat{Path: tr.Path, Format: tr.Format, Rank: tr.Rank, Events: tr.Counts["events"],
				Slices: tr.Slices.Len(), JSONBytes: tr.JSONBytes, Read: res.took}
			stats.Events += int64(fs.Events)
			stats.JSONBytes += tr.JSONBytes
			switch {
			case tr.Format == kineto.FormatExecTrace:
				fs.Skipped = fmt.Sprintf("a PyTorch Execution Trace (%d operator nodes, no timeline); pair it with the Kineto trace of the same run", tr.ETNodes)
			case tr.Format == kineto.FormatChrome && !tr.HasEvents:
				fs.Skipped = "a JSON object without traceEvents: not a profiler trace"
			case tr.RankSource == "default" && opt.Rank < 0:
				unranked = append(unranked, tr)
			case len(keep) > 0 && !keep[int(tr.Rank)]:
				fs.Skipped = fmt.Sprintf("rank %d is not in --ranks", tr.Rank)
			}
			if tr.RankSource == "default" && opt.Rank >= 0 {
				tr.Rank, tr.RankSource = int32(opt.Rank), "flag"
				fs.Rank = tr.Rank
			}
			if fs.Skipped == "" && !(tr.RankSource == "default" && opt.Rank < 0) {
				if err := insertTrace(ctx, sink, opt, tr, taken, stats); err != nil {
					return nil, err
				}
			}
			progress(opt.Progress, done, len(files), fs)
		}
	}
	// Traces that name no rank get the lowest free ranks, in file order.
	sort.Slice(unranked, func(i, j int) bool { return unranked[i].Path < unranked[j].Path })
	next := int32(0)
	for _, tr := range unranked {
		for taken[next] != "" {
			next++
		}
		tr.Rank, tr.RankSource = next, "file order"
		for i := range stats.Files {
			if stats.Files[i].Path == tr.Path {
				stats.Files[i].Rank = next
			}
		}
		if len(keep) > 0 && !keep[int(next)] {
			taken[next] = tr.Path
			continue
		}
		if err := insertTrace(ctx, sink, opt, tr, taken, stats); err != nil {
			return nil, err
		}
	}
	// Snapshots go after the traces: a rank that has a trace keeps its
	// trace's ranks row, one known only from its snapshot gets a snapshot row.
	snapOrder := make([]int32, 0, len(snapRanks))
	for rank := range snapRanks {
		snapOrder = append(snapOrder, rank)
	}
	slices.Sort(snapOrder)
	for _, rank := range snapOrder {
		snap := snapRanks[rank]
		bs, err := SnapshotBatches(snap, opt.RunID, hostOf(opt, ""), rank)
		if err != nil {
			return nil, &InputError{err}
		}
		if taken[rank] != "" { // keep the trace's ranks row
			Release(bs[len(bs)-1:])
			bs = bs[:len(bs)-1]
		} else {
			taken[rank] = snap.Path
		}
		t0 := time.Now()
		err = Send(ctx, sink, snap.Path, bs, opt.warn)
		stats.Insert += time.Since(t0)
		if err != nil {
			return nil, err
		}
	}
	if len(taken) == 0 && sideFiles == 0 {
		return stats, &InputError{fmt.Errorf("nothing to analyze: %s", skippedSummary(stats))}
	}
	stats.Wall = time.Since(start)
	return stats, nil
}

// badReason is why a file could not be read: err's text without the
// path it starts with (a reader's errors name their file).
func badReason(path string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Op + ": " + pe.Err.Error()
	}
	msg := strings.TrimSpace(err.Error())
	if cut, ok := strings.CutPrefix(msg, path+": "); ok {
		return cut
	}
	return msg
}

func skippedSummary(s *Stats) string {
	var parts []string
	for _, f := range s.Files {
		if f.Skipped != "" {
			parts = append(parts, f.Path+": "+f.Skipped)
		}
	}
	if len(parts) == 0 {
		return "no ranks selected"
	}
	return strings.Join(parts, "; ")
}

func progress(w io.Writer, done, total int, f *FileStat) {
	if w == nil {
		return
	}
	if f.Skipped != "" {
		fmt.Fprintf(w, "[%d/%d] skipped %s: %s\n", done, total, f.Path, f.Skipped)
		return
	}
	if f.Format == "launch_script" {
		fmt.Fprintf(w, "[%d/%d] %s: launch script, %d flag occurrences, parsed in %s\n", done, total, f.Path, f.Events, f.Read.Round(time.Millisecond))
		return
	}
	if f.Format == "ncu_details" || f.Format == "ncu_raw" {
		fmt.Fprintf(w, "[%d/%d] %s: Nsight Compute export (%s page), %d metrics into kernel_metrics, read in %s\n", done, total, f.Path, strings.TrimPrefix(string(f.Format), "ncu_"), f.Events, f.Read.Round(time.Millisecond))
		return
	}
	if f.Format == "dcgm_scrape" {
		fmt.Fprintf(w, "[%d/%d] %s: Prometheus scrape (dcgm-exporter), %d samples into counters, read in %s\n", done, total, f.Path, f.Events, f.Read.Round(time.Millisecond))
		return
	}
	fmt.Fprintf(w, "[%d/%d] %s: %s, rank %d, %d events, %.1f MB JSON, read in %s\n", done, total, f.Path, f.Format,
		f.Rank, f.Events, float64(f.JSONBytes)/1e6, f.Read.Round(time.Millisecond))
}

// snapshotRank is the rank a snapshot file belongs to: from its name
// (rank-3, worker_3...), else the --rank flag, else 0.
func snapshotRank(path string, flag int) int32 {
	if r, ok := trace.RankFromName(path); ok {
		return int32(r)
	}
	if flag >= 0 {
		return int32(flag)
	}
	return 0
}

// InputError is a problem with what the user gave rather than with the
// machine: nothing loadable, two files claiming one rank.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// IsInputError reports whether err is bad input: an InputError or a
// reader's FileError.
func IsInputError(err error) bool {
	var ie *InputError
	var fe *jsonscan.FileError
	var ne *nsys.FileError
	return errors.As(err, &ie) || errors.As(err, &fe) || errors.As(err, &ne)
}
