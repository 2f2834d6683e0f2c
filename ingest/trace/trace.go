package trace

import (
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/trainscope/trainscope/stream"
)

// Format names what a file turned out to hold ("kineto", "nsys"...).
type Format string

// Trace is one rank's timeline read into column tables.
type Trace struct {
	Path   string
	Format Format

	Rank       int32
	RankSource string // distributedInfo, file name, flag, default, or a reader's own
	Dist       DistributedInfo
	Devices    []DeviceProps
	TraceName  string

	BaseTimeNS      int64
	HasBaseTime     bool
	DisplayTimeUnit string
	// Host is the machine the trace says it ran on, or "": a file name is
	// not taken for one.
	Host     string
	Complete bool // nothing was cut off at the end

	Str      *stream.Strings
	Slices   *stream.SliceTable
	Steps    stream.StepTable
	Counters stream.CounterTable
	// Account is the step-time account of the trace (ingest/timeline).
	Account []stream.AccountRow

	// Counts of events by phase, by slice kind ("kind:<kind>") and what
	// else a reader counts; "events" is what the ranks row records.
	Counts map[string]int

	ThreadNames  map[int64]string // tid -> name
	ProcessNames map[int64]string // pid -> name

	StartNS, EndNS int64 // span of the slices (ns since epoch)
	JSONBytes      int64 // bytes parsed (an nsys export: its share of the file)
	ETNodes        int   // nodes of a PyTorch execution trace
	HasEvents      bool  // the file had a timeline (a traceEvents array)

	// Notes are problems in the file the reader repaired rather than
	// refused (names that were not UTF-8), each saying where.
	Notes []string

	// Rest, when set, holds the slices of a trace too big to hold, read
	// again chunk by chunk (EachChunk): Slices has only their number and
	// call stacks.
	Rest Rest
}

// Rest reads the slices of a trace that was not held whole.
type Rest interface {
	// EachChunk hands t's slices to fn in chunks, in file order, each
	// with the counters read since the chunk before (nil if none); the
	// counters after the last slice go to t.Counters.
	EachChunk(t *Trace, fn func(*stream.SliceTable, *stream.CounterTable) error) error
	// Device is the device of the first GPU activity, false if none.
	Device() (int32, bool)
}

// TwoPass says whether t's slices are read again by EachChunk rather than
// held in t.Slices.
func (t *Trace) TwoPass() bool { return t.Rest != nil }

// EachChunk hands the trace's slices to fn: a trace held whole is one
// chunk, its counters staying in t.Counters; one that is not is read
// again by its Rest.
func (t *Trace) EachChunk(fn func(*stream.SliceTable, *stream.CounterTable) error) error {
	if t.Rest == nil {
		return fn(t.Slices, nil)
	}
	return t.Rest.EachChunk(t, fn)
}

// DistributedInfo is what a trace says of the job: Kineto's top-level
// distributedInfo, or what an nsys export's capture environment names.
type DistributedInfo struct {
	Backend     string
	Rank        *int
	WorldSize   int
	PGCount     int
	PGConfig    []ProcessGroup
	NCCLVersion string
}

// ProcessGroup is one process group of the job.
type ProcessGroup struct {
	Name          string
	Desc          string
	BackendConfig string
	Size          int
	Ranks         []int
}

// DeviceProps describes one GPU.
type DeviceProps struct {
	ID             int
	Name           string
	TotalGlobalMem int64
	ComputeMajor   int
	ComputeMinor   int
	NumSMs         int
}

// Device is the CUDA device of the trace's first GPU activity, false when
// it has none: the GPU a rank ran on, which counters of that GPU name.
func (t *Trace) Device() (int32, bool) {
	if t.Rest != nil {
		return t.Rest.Device()
	}
	if t.Slices != nil {
		for i, v := range t.Slices.Device.V {
			if t.Slices.Device.Valid(i) {
				return v, true
			}
		}
	}
	return 0, false
}

// GPUName is the name of the device the rank's kernels ran on, or of the
// first visible device when that is unknown.
func (t *Trace) GPUName() string {
	dev := -1
	if d, ok := t.Device(); ok {
		dev = int(d)
	}
	for _, d := range t.Devices {
		if d.ID == dev {
			return d.Name
		}
	}
	if len(t.Devices) > 0 {
		return t.Devices[0].Name
	}
	return ""
}

var rankInName = regexp.MustCompile(`(?i)(?:^|[^a-z])(?:rank|worker)[-_]?(\d+)`)

// RankFromName returns the rank a file name claims ("rank-3", "rank3",
// "worker_3", "..._rank12_dp0...").
func RankFromName(path string) (int, bool) {
	m := rankInName.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}
