package kineto

import (
	"github.com/trainscope/trainscope/ingest/jsonscan"
	"github.com/trainscope/trainscope/ingest/trace"
)

// Format names what a file turned out to hold (trace.Format).
type Format = trace.Format

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

// Trace is one file read into the neutral trace model (ingest/trace),
// which the nsys reader fills too.
type Trace = trace.Trace

// distributedInfo is the trace's top-level distributedInfo object as
// written (trace.DistributedInfo once read).
type distributedInfo struct {
	Backend     string         `json:"backend"`
	Rank        *int           `json:"rank"`
	WorldSize   int            `json:"world_size"`
	PGCount     int            `json:"pg_count"`
	PGConfig    []processGroup `json:"pg_config"`
	NCCLVersion string         `json:"nccl_version"`
}

// processGroup is one pg_config entry.
type processGroup struct {
	Name          flexString `json:"pg_name"`
	Desc          string     `json:"pg_desc"`
	BackendConfig string     `json:"backend_config"`
	Size          int        `json:"pg_size"`
	Ranks         []int      `json:"ranks"`
}

// deviceProps is one deviceProperties entry.
type deviceProps struct {
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

// model is what distributedInfo says, in the trace model.
func (d distributedInfo) model() trace.DistributedInfo {
	out := trace.DistributedInfo{Backend: d.Backend, Rank: d.Rank, WorldSize: d.WorldSize, PGCount: d.PGCount,
		NCCLVersion: d.NCCLVersion}
	for _, pg := range d.PGConfig {
		out.PGConfig = append(out.PGConfig, trace.ProcessGroup{Name: string(pg.Name), Desc: pg.Desc,
			BackendConfig: pg.BackendConfig, Size: pg.Size, Ranks: pg.Ranks})
	}
	return out
}

// devicesModel is deviceProperties in the trace model.
func devicesModel(ds []deviceProps) []trace.DeviceProps {
	if ds == nil {
		return nil
	}
	out := make([]trace.DeviceProps, len(ds))
	for i, d := range ds {
		out[i] = trace.DeviceProps{ID: d.ID, Name: d.Name, TotalGlobalMem: d.TotalGlobalMem,
			ComputeMajor: d.ComputeMajor, ComputeMinor: d.ComputeMinor, NumSMs: d.NumSMs}
	}
	return out
}
