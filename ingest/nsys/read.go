package nsys

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/trainscope/trainscope/ingest/trace"
)

// Format is the Format of every trace read from an nsys export.
const Format trace.Format = "nsys"

// Rank sources this reader sets (trace.Trace.RankSource).
const (
	RankFromOption = "option"              // Options.RankOf or Options.FirstRank
	RankFromEnv    = "capture environment" // RANK (or an MPI/Slurm equivalent) of the profiled command
	RankFromName   = "file name"           // rank-3.sqlite, rank_3_....sqlite
	RankFromOrder  = "nsys device order"   // position in (globalPid, deviceId) order
	RankDefault    = "default"             // one GPU and nothing names its rank: ingest may renumber it
)

// GPU is one trace of an export: the work one process ran on one CUDA
// device.
type GPU struct {
	GlobalPID int64  // nsys's serialized globalPid (host/VM id and pid)
	PID       int64  // OS process id
	Process   string // process name from PROCESSES, when known
	Device    int32  // CUDA device id as CUPTI reports it (deviceId)
	Index     int    // position in (GlobalPID, Device) order, from 0
}

// Options tune ReadFile. The zero value is usable.
type Options struct {
	// FirstRank is added to ranks taken from GPU order, so that the export
	// of a second 8-GPU node can take ranks 8-15. A non-zero FirstRank also
	// gives a single-GPU export that rank.
	FirstRank int
	// RankOf, when set, names a GPU's rank; ok false falls back to the
	// default mapping. Two GPUs given one rank are an error.
	RankOf func(g GPU) (rank int, ok bool)
}

// unit is one GPU of the export while it is read.
type unit struct {
	GPU
	b *builder
	// gpuID is the physical GPU (TARGET_INFO_GPU.id) behind Device, which
	// GPU metrics are keyed by.
	gpuID    int64
	hasGPUID bool
}

// reader reads one export.
type reader struct {
	d     *db
	strs  map[int64]string
	units map[[2]int64]*unit // (globalPid, device)
	// first is each process's unit with the lowest device: its host events
	// (runtime calls that launched nothing, NVTX ranges) go there.
	first map[int64]*unit
	// multi lists processes with work on several devices; only their
	// runtime calls need routing by correlation id.
	multi  map[int64]bool
	launch map[[2]int64]*unit // (globalPid, correlationId) -> unit, for multi processes
	byProc map[int64][]*unit  // globalPid -> its units in device order
	ctxDev map[[2]int64]int64 // (globalPid, contextId) -> device
	// orphans counts host rows of processes that ran nothing on a GPU.
	orphans int
}

// ReadFile reads an Nsight Systems SQLite export into one trace per GPU
// (process and CUDA device), ordered by rank.
func ReadFile(path string, opt Options) ([]*trace.Trace, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	d, err := openDB(context.Background(), path)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	r := &reader{d: d, units: map[[2]int64]*unit{}, first: map[int64]*unit{}, multi: map[int64]bool{},
		launch: map[[2]int64]*unit{}, ctxDev: map[[2]int64]int64{}}
	if r.strs, err = d.stringIDs(); err != nil {
		return nil, err
	}
	base, hasBase, err := d.sessionStart()
	if err != nil {
		return nil, err
	}
	if err := r.discover(); err != nil {
		return nil, err
	}
	if len(r.units) == 0 {
		return nil, &FileError{Path: path, Msg: "an Nsight Systems export without GPU activity (no kernel, memcpy or memset rows): " +
			"nothing to analyze per GPU; profile with --trace=cuda"}
	}
	order := r.ordered()
	for _, u := range order {
		u.b = newBuilder(path, base, hasBase)
	}
	for _, step := range []func() error{r.readKernels, r.readMemcpy, r.readMemset, r.readSync, r.readRuntime,
		r.readNVTX, r.readProcesses, r.readThreads, r.readDevices, r.readMetrics} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := r.assignRanks(order, opt); err != nil {
		return nil, err
	}
	out := make([]*trace.Trace, len(order))
	for i, u := range order {
		u.b.finish()
		t := u.b.t
		t.TraceName = fmt.Sprintf("pid %d device %d", u.PID, u.Device)
		if u.Process != "" {
			t.TraceName = fmt.Sprintf("%s (pid %d) device %d", u.Process, u.PID, u.Device)
		}
		// The file's bytes, split so that summing over its traces gives
		// the file size.
		t.JSONBytes = st.Size() / int64(len(order))
		if i == 0 {
			t.JSONBytes += st.Size() % int64(len(order))
		}
		if r.orphans > 0 {
			t.Counts["host_rows_without_gpu"] = r.orphans
		}
		out[i] = t
	}
	slices.SortStableFunc(out, func(a, b *trace.Trace) int { return int(a.Rank - b.Rank) })
	return out, nil
}

// gpuTables are the CUPTI tables whose rows ran on a device. The
// SYNCHRONIZATION table is not one: its deviceId is 0 whatever the device
// (CUPTI's record has none), so its rows find their device by context.
var gpuTables = []string{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}

// discover finds every (process, device) pair with GPU work before any row
// is read, so that host rows can be routed while they are read, and which
// device each CUDA context belongs to.
func (r *reader) discover() error {
	for _, table := range gpuTables {
		q, ok, err := r.d.sel(table, []string{"deviceId"}, []string{"globalPid", "contextId"}, "")
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		q = "SELECT DISTINCT * FROM (" + q + ")"
		err = r.d.each("reading "+table, q, nil, func(scan func(...any) error) error {
			var dev int64
			var gpid, ctx nullInt
			if err := scan(&dev, &gpid, &ctx); err != nil {
				return err
			}
			r.unitFor(gpid.Int64, dev)
			if ctx.Valid {
				r.ctxDev[[2]int64{gpid.Int64, ctx.Int64}] = dev
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, u := range r.units {
		if f := r.first[u.GlobalPID]; f == nil || u.Device < f.Device {
			r.first[u.GlobalPID] = u
		}
	}
	for _, u := range r.units {
		if r.first[u.GlobalPID] != u {
			r.multi[u.GlobalPID] = true
		}
	}
	return nil
}

func (r *reader) unitFor(gpid, dev int64) *unit {
	k := [2]int64{gpid, dev}
	u := r.units[k]
	if u == nil {
		u = &unit{GPU: GPU{GlobalPID: gpid, PID: pidOf(gpid), Device: int32(dev)}}
		r.units[k] = u
	}
	return u
}

// ordered lists the units by (globalPid, device) and numbers them.
func (r *reader) ordered() []*unit {
	out := make([]*unit, 0, len(r.units))
	for _, u := range r.units {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b *unit) int {
		if a.GlobalPID != b.GlobalPID {
			if a.GlobalPID < b.GlobalPID {
				return -1
			}
			return 1
		}
		return int(a.Device - b.Device)
	})
	r.byProc = map[int64][]*unit{}
	for i, u := range out {
		u.Index = i
		r.byProc[u.GlobalPID] = append(r.byProc[u.GlobalPID], u)
	}
	return out
}

// hostUnit is where a host row of process gpid goes, or nil.
func (r *reader) hostUnit(gpid int64) *unit {
	if u := r.first[gpid]; u != nil {
		return u
	}
	// GPU rows without globalPid (old exports): with one such GPU, every
	// host row is its process's.
	if len(r.units) == 1 {
		for _, u := range r.units {
			if u.GlobalPID == 0 {
				return u
			}
		}
	}
	r.orphans++
	return nil
}

// pidOf and tidOf decode nsys's serialized global ids: the thread id in the
// low 24 bits, the process id in the next 24.
func pidOf(g int64) int64 { return (g >> 24) & 0xFFFFFF }
func tidOf(g int64) int64 { return g & 0xFFFFFF }

// gpidOf is the globalPid of a globalTid.
func gpidOf(gtid int64) int64 { return gtid &^ 0xFFFFFF }

// assignRanks gives every unit its rank: Options.RankOf first; a single
// GPU then takes the rank its capture environment or file name names;
// several GPUs are numbered in (globalPid, device) order from FirstRank.
func (r *reader) assignRanks(order []*unit, opt Options) error {
	envRank, envWorld, err := r.captureEnv()
	if err != nil {
		return err
	}
	nameRank, nameOK := trace.RankFromName(r.d.path)
	seen := map[int32]GPU{}
	for _, u := range order {
		t := u.b.t
		rank, src := opt.FirstRank+u.Index, RankFromOrder
		switch {
		case len(order) > 1:
		case opt.FirstRank != 0:
			src = RankFromOption
		case envRank >= 0:
			rank, src = envRank, RankFromEnv
		case nameOK:
			rank, src = nameRank, RankFromName
		default:
			src = RankDefault
		}
		if opt.RankOf != nil {
			if v, ok := opt.RankOf(u.GPU); ok {
				rank, src = v, RankFromOption
			}
		}
		if prev, dup := seen[int32(rank)]; dup {
			return fmt.Errorf("%s: rank %d given to both pid %d device %d and pid %d device %d", r.d.path, rank,
				prev.PID, prev.Device, u.PID, u.Device)
		}
		seen[int32(rank)] = u.GPU
		t.Rank, t.RankSource = int32(rank), src
		switch {
		case envWorld > 0:
			t.Dist.WorldSize = envWorld
		case len(order) > 1 && opt.FirstRank == 0:
			// the export holds every GPU of the job as far as it can tell
			t.Dist.WorldSize = len(order)
		}
		if src == RankFromEnv || src == RankFromOption || src == RankFromName {
			v := rank
			t.Dist.Rank = &v
		}
	}
	return nil
}

// rankVars and worldVars name a process's rank and world size, in order of
// preference: torchrun, Open MPI, MPICH/PMI, Slurm.
var (
	rankVars  = []string{"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}
	worldVars = []string{"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}
)

// captureEnv reads the rank and world size from the environment nsys
// recorded for the command it launched (META_DATA_CAPTURE), as when each
// rank runs under its own `nsys profile`. -1 / 0 when absent.
func (r *reader) captureEnv() (rank, world int, err error) {
	rank = -1
	q, ok, err := r.d.sel("META_DATA_CAPTURE", []string{"name", "value"}, nil,
		"WHERE name LIKE 'PROCESS_%:ENVIRONMENT_VARIABLE'")
	if err != nil || !ok {
		return rank, 0, err
	}
	env := map[string]string{}
	err = r.d.each("reading META_DATA_CAPTURE", q, nil, func(scan func(...any) error) error {
		var name string
		var value nullString
		if err := scan(&name, &value); err != nil {
			return err
		}
		if k, v, ok := strings.Cut(value.String, "="); ok {
			env[k] = strings.Trim(v, `"`)
		}
		return nil
	})
	if err != nil {
		return -1, 0, err
	}
	for _, k := range rankVars {
		if v, err := strconv.Atoi(env[k]); err == nil && v >= 0 {
			rank = v
			break
		}
	}
	for _, k := range worldVars {
		if v, err := strconv.Atoi(env[k]); err == nil && v > 0 {
			world = v
			break
		}
	}
	return rank, world, nil
}
