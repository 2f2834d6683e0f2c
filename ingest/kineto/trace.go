package kineto

import (
	"github.com/trainscope/trainscope/ingest/jsonscan"

	"github.com/trainscope/trainscope/stream"
)

// Format names what a file turned out to hold.
type Format string

const (
	FormatChrome         Format = "kineto"          // Chrome-trace JSON from torch.profiler
	FormatMemoryTimeline Format = "memory_timeline" // MemoryProfileTimeline.export_memory_timeline_raw
	FormatExecTrace      Format = "execution_trace" // PyTorch Execution Trace (nodes, no timeline)
)

// Options tune how a trace is read. The zero value is usable.
type Options struct {
	// RunID and Host label every row.
	RunID, Host string
	// Rank is used when neither distributedInfo nor the file name gives one;
	// negative means "unknown" (the trace is then rank 0 unless the caller
	// renumbers it).
	Rank int
	// NoPrefetch turns off the background decompression goroutine.
	NoPrefetch bool
	// SizeHint is the expected JSON size in bytes (0: unknown); ReadFile
	// sets it from the file.
	SizeHint int64
	// TwoPassBytes makes ReadFile read a file of at least this many bytes
	// of JSON in two passes (see ReadFileTwoPass); 0: never.
	TwoPassBytes int64
	// ChunkRows is how many rows each chunk of a two-pass read holds
	// (0: 256K).
	ChunkRows int

	slim bool // the first pass of ReadFileTwoPass
}

// Trace is one file read into column tables.
type Trace struct {
	Path   string
	Format Format

	Rank       int32
	RankSource string // distributedInfo, file name, flag, default
	Dist       DistributedInfo
	Devices    []DeviceProps
	TraceName  string

	BaseTimeNS      int64
	HasBaseTime     bool
	DisplayTimeUnit string
	// Host is the machine the trace says it ran on (a top-level host_name
	// or hostname key), or "": a file name is not taken for one.
	Host     string
	Complete bool // saw the final "Record Window End" instant

	Str      *stream.Strings
	Slices   *stream.SliceTable
	Steps    stream.StepTable
	Counters stream.CounterTable
	// Account is the step-time account of the trace (ingest/timeline).
	Account []stream.AccountRow

	// Counts of events by phase and by slice kind: keys "X", "i", "C", "M",
	// "s", "f", and "kind:<kind>".
	Counts map[string]int

	ThreadNames  map[int64]string // tid -> name from "M" thread_name events
	ProcessNames map[int64]string // pid -> name from "M" process_name events

	StartNS, EndNS int64 // span of duration events (ns since epoch)
	JSONBytes      int64 // uncompressed bytes parsed
	ETNodes        int   // nodes of an execution trace
	HasEvents      bool  // the document had a traceEvents array (or was one)

	// Notes are problems in the file the reader repaired rather than
	// refused (names that were not UTF-8), each saying where.
	Notes []string

	again        *secondPass // a two-pass read's slices, to come (EachChunk)
	countersLeft bool        // its first pass left counters for the second
}

// DistributedInfo is the trace's top-level distributedInfo object.
type DistributedInfo struct {
	Backend     string         `json:"backend"`
	Rank        *int           `json:"rank"`
	WorldSize   int            `json:"world_size"`
	PGCount     int            `json:"pg_count"`
	PGConfig    []ProcessGroup `json:"pg_config"`
	NCCLVersion string         `json:"nccl_version"`
}

// ProcessGroup is one pg_config entry.
type ProcessGroup struct {
	Name          flexString `json:"pg_name"`
	Desc          string     `json:"pg_desc"`
	BackendConfig string     `json:"backend_config"`
	Size          int        `json:"pg_size"`
	Ranks         []int      `json:"ranks"`
}

// DeviceProps is one deviceProperties entry.
type DeviceProps struct {
	ID             int    `json:"id"`
	Name           string `json:"name"`
	TotalGlobalMem int64  `json:"totalGlobalMem"`
	ComputeMajor   int    `json:"computeMajor"`
	ComputeMinor   int    `json:"computeMinor"`
	NumSMs         int    `json:"numSms"`
}

// flexString accepts a JSON string or number.
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*f = flexString(jsonscan.Unescape(b[1 : len(b)-1]))
		return nil
	}
	*f = flexString(b)
	return nil
}

// Device is the CUDA device of the trace's first GPU activity, false when
// it has none: the GPU a rank ran on, which counters of that GPU name.
func (t *Trace) Device() (int32, bool) {
	if t.again != nil {
		return t.again.device, t.again.hasDevice
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
