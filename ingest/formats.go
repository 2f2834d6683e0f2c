package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/trainscope/trainscope/ingest/kineto"
	"github.com/trainscope/trainscope/ingest/memsnap"
	"github.com/trainscope/trainscope/ingest/ncu"
	"github.com/trainscope/trainscope/ingest/nsys"
	"github.com/trainscope/trainscope/ingest/trace"
)

// A Reader reads one format of file. Read sniffs each file's first bytes
// (and its name) with every registered Reader in turn and reads it with
// the first that claims it.
type Reader interface {
	// Name names the format ("kineto", "nsys_sqlite"...).
	Name() string
	// Sniff says whether the file is of this format, from its first
	// SniffBytes bytes (fewer for a shorter file; none when it could not
	// be read: the Reader that takes it says why) and its path.
	Sniff(head []byte, path string) bool
	// Read reads the file. Its errors name the file and, where the
	// content is at fault, the byte offset.
	Read(ctx context.Context, path string, opt ReadOptions) (*Loaded, error)
}

// ReadOptions are what a Reader is told of the load.
type ReadOptions struct {
	Options
	// NoPrefetch: enough files to keep every worker busy, so a reader
	// needs no goroutine of its own to read ahead.
	NoPrefetch bool
}

// Loaded is what a Reader read from one file: one of its fields is set.
type Loaded struct {
	// Traces are timelines, each given a rank: a Kineto trace, or one per
	// GPU of an nsys export.
	Traces []*trace.Trace
	// Snapshot is a CUDA memory snapshot; snapshots go in after the
	// traces, under the rank their file name gives.
	Snapshot *memsnap.Snapshot
	// Side is a file that joins the run whole, with no rank of its own: a
	// launch script, a scrape, an ncu export.
	Side *SideFile
}

// SideFile is a file without a rank of its own.
type SideFile struct {
	Path   string
	Format trace.Format
	Events int // flags, samples or metrics: what progress counts
	// Batches makes its tables for the run, and notes for Warn.
	Batches func(runID, host string) ([]Batch, []string)
}

// SniffBytes is how much of a file's beginning Sniff is shown.
const SniffBytes = 64 << 10

// registry holds the Readers in the order they are asked: the ones that
// know a file by its name or its magic first, Kineto last. Kineto claims
// whatever no other does, so that a file of no known format gets its
// errors: they say what a trace should have been and where the file
// differs.
var registry = []Reader{scriptReader{}, ncuReader{}, scrapeReader{}, nsysReader{}, memsnapReader{}, kinetoReader{}}

// Readers are the registered Readers, in the order Sniff asks them.
func Readers() []Reader { return append([]Reader(nil), registry...) }

// Sniff reads the beginning of the file at path and says which Reader
// takes it. A file that cannot be opened gets the Reader its name alone
// picks, whose Read reports why.
func Sniff(path string) Reader {
	return sniffHead(readHead(path), path)
}

func sniffHead(head []byte, path string) Reader {
	r, _ := pick(head, path, false)
	return r
}

// pick is the Reader that takes a file by its head and path. With lazy,
// a gzip head is not shown to the memory snapshot reader (its Sniff
// inflates the head): pick says it left it out, and the Reader it gives
// is then the Kineto reader, the only one after it.
func pick(head []byte, path string, lazy bool) (r Reader, snapshotLeft bool) {
	for _, r := range registry {
		if _, ok := r.(memsnapReader); ok && lazy && isGzip(head) {
			snapshotLeft = true
			continue
		}
		if r.Sniff(head, path) {
			return r, snapshotLeft
		}
	}
	return kinetoReader{}, snapshotLeft // unreachable: Kineto claims every file
}

func isGzip(head []byte) bool { return len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b }

// lazySniffBytes: a gzip file of at most this size is read as a trace
// before its head is sniffed for a memory snapshot (readFile). Its head is
// a large share of what it inflates; a larger file's head is too small a
// share to pay for a failed read as a trace.
const lazySniffBytes = 16 * SniffBytes

// readFile reads the file at path with the Reader Sniff picks for it. A
// small gzip file (lazySniffBytes) that no Reader before the snapshot's
// claims is read as a trace first: the snapshot's sniff inflates its
// head, and the trace's read inflated it again (a third of the inflating
// of each of r512's 185 KB ranks, 1.2 s of CPU in all). Only when that
// read fails is the head sniffed, so the file goes where Sniff sends it:
// a read as a trace that succeeds met no top-level key "segments" or
// "device_traces" (the Kineto reader refuses both), so Sniff, which looks
// for one among the top-level keys of the head, would not have found one.
func readFile(ctx context.Context, path string, opt ReadOptions) (*Loaded, error) {
	head := readHead(path)
	lazy := false
	if fi, err := os.Stat(path); err == nil && fi.Size() <= lazySniffBytes {
		lazy = true
	}
	r, left := pick(head, path, lazy)
	got, err := r.Read(ctx, path, opt)
	if err != nil && left && memsnap.Sniff(head) {
		return memsnapReader{}.Read(ctx, path, opt)
	}
	return got, err
}

// readHead is the first SniffBytes of a file, or fewer; nil when it cannot
// be read.
func readHead(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, SniffBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil
	}
	return head[:n]
}

// scriptReader reads launch scripts (*.sh) for the config audit; they are
// never executed.
type scriptReader struct{}

func (scriptReader) Name() string                  { return "launch_script" }
func (scriptReader) Sniff(_ []byte, p string) bool { return IsScript(p) }
func (scriptReader) Read(_ context.Context, path string, _ ReadOptions) (*Loaded, error) {
	sc, err := ReadScript(path)
	if err != nil {
		return nil, err
	}
	return &Loaded{Side: &SideFile{Path: sc.Path, Format: "launch_script", Events: len(sc.Flags),
		Batches: func(runID, _ string) ([]Batch, []string) { return ScriptBatches(sc, runID), nil }}}, nil
}

// ncuReader reads Nsight Compute CSV exports (a .csv whose header has ID
// and Kernel Name) into kernel_metrics.
type ncuReader struct{}

func (ncuReader) Name() string { return "ncu_csv" }
func (ncuReader) Sniff(head []byte, p string) bool {
	return ncu.SniffHead(p, head, len(head) == SniffBytes)
}
func (ncuReader) Read(_ context.Context, path string, _ ReadOptions) (*Loaded, error) {
	e, err := readNCU(path)
	if err != nil {
		return nil, err
	}
	return &Loaded{Side: &SideFile{Path: e.Path, Format: trace.Format("ncu_" + e.Layout), Events: len(e.Metrics),
		Batches: func(runID, host string) ([]Batch, []string) { return ncuBatches(e, runID, host), e.Notes }}}, nil
}

// scrapeReader reads saved Prometheus scrapes (*.prom), such as
// dcgm-exporter's, into counters.
type scrapeReader struct{}

func (scrapeReader) Name() string                  { return "dcgm_scrape" }
func (scrapeReader) Sniff(_ []byte, p string) bool { return IsScrape(p) }
func (scrapeReader) Read(_ context.Context, path string, _ ReadOptions) (*Loaded, error) {
	s, err := readScrapes(path)
	if err != nil {
		return nil, err
	}
	return &Loaded{Side: &SideFile{Path: s.path, Format: "dcgm_scrape", Events: s.samples(), Batches: s.batches}}, nil
}

// nsysReader reads Nsight Systems SQLite exports: one trace per GPU.
type nsysReader struct{}

func (nsysReader) Name() string                     { return "nsys_sqlite" }
func (nsysReader) Sniff(head []byte, _ string) bool { return nsys.SniffHead(head) }
func (nsysReader) Read(_ context.Context, path string, _ ReadOptions) (*Loaded, error) {
	trs, err := nsys.ReadFile(path, nsys.Options{})
	if err != nil {
		return nil, err
	}
	return &Loaded{Traces: trs}, nil
}

// memsnapReader reads CUDA memory snapshots (JSON, plain or gzip, whose
// first keys are segments or device_traces).
type memsnapReader struct{}

func (memsnapReader) Name() string                     { return "memory_snapshot" }
func (memsnapReader) Sniff(head []byte, _ string) bool { return memsnap.Sniff(head) }
func (memsnapReader) Read(_ context.Context, path string, opt ReadOptions) (*Loaded, error) {
	if opt.TracesOnly {
		return nil, &InputError{fmt.Errorf("%s is a CUDA memory snapshot, not a trace: give it as --memory %s", path, path)}
	}
	snap, err := memsnap.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return &Loaded{Snapshot: snap}, nil
}

// kinetoReader reads PyTorch profiler traces (Chrome-trace JSON, plain or
// gzip), memory timelines and execution traces; a trace of twoPassBytes of
// JSON or more is read in two passes. It claims every file: one of no
// other format is refused by its errors.
type kinetoReader struct{}

func (kinetoReader) Name() string              { return "kineto" }
func (kinetoReader) Sniff([]byte, string) bool { return true }
func (kinetoReader) Read(_ context.Context, path string, opt ReadOptions) (*Loaded, error) {
	tr, err := kineto.ReadFile(path, kineto.Options{RunID: opt.RunID, Host: opt.Host, Rank: -1,
		NoPrefetch: opt.NoPrefetch, TwoPassBytes: twoPassBytes, ChunkRows: twoPassChunkRows})
	if err != nil {
		return nil, err
	}
	return &Loaded{Traces: []*trace.Trace{tr}}, nil
}
