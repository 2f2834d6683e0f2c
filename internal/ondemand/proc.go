package ondemand

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Peer is what the daemon knows of a process that sent a datagram.
type Peer struct {
	// PID is the pid the process reports (libkineto's getpid(), in its own
	// pid namespace); libkineto names its trace files with it.
	PID int
	// Ancestors are the pids of its parents as it reports them, nearest
	// first (a poll carries them; a registration does not).
	Ancestors []int
	// JobID is libkineto's job id: SLURM_JOB_ID in the process, else 0.
	JobID int64
	// GPU is the device it registered with, -1 when it only polled.
	GPU int
	// Cred says whether the kernel vouched for the sender (SCM_CREDENTIALS):
	// then HostPID and UID are the sender's, in the daemon's namespaces.
	Cred    bool
	HostPID int
	UID     int
}

// ProcInfo is what the host says of a process: its owner and the parts of
// its environment the daemon uses.
type ProcInfo struct {
	UID int
	// Rank, LocalRank and WorldSize are RANK, LOCAL_RANK and WORLD_SIZE
	// (torchrun, torch.distributed), -1 when unset or not a number.
	Rank, LocalRank, WorldSize int
	// Run is TRAINSCOPE_RUN when set: the run the job says it is.
	Run string
	// JobID is the scheduler's job: TORCHELASTIC_RUN_ID (unless torchrun's
	// default "none"), else SLURM_JOB_ID, else "".
	JobID string
	// TraceDir is KINETO_ONDEMAND_TRACE_DIR: where libkineto (≥ 2026-06)
	// lets on-demand traces go ("" = /tmp/).
	TraceDir string
}

// Inspector says who a peer is. ProcFS is the real one; tests inject
// their own (another uid, ranks for fake processes).
type Inspector func(Peer) (ProcInfo, error)

// maxEnviron bounds what is read of /proc/PID/environ.
const maxEnviron = 1 << 20

// ProcFS inspects processes through the proc file system mounted at root
// ("/proc"): the owner from status (the real uid), the environment from
// environ. It looks the kernel's pid up when the kernel vouched for it
// (the process may live in another pid namespace), else the reported one.
func ProcFS(root string) Inspector {
	return func(p Peer) (ProcInfo, error) {
		pid := p.PID
		if p.Cred && p.HostPID > 0 {
			pid = p.HostPID
		}
		dir := filepath.Join(root, strconv.Itoa(pid))
		uid, err := statusUID(filepath.Join(dir, "status"))
		if err != nil {
			return ProcInfo{}, err
		}
		f, err := os.Open(filepath.Join(dir, "environ"))
		if err != nil {
			return ProcInfo{}, err
		}
		defer f.Close()
		env, err := io.ReadAll(io.LimitReader(f, maxEnviron))
		if err != nil {
			return ProcInfo{}, err
		}
		info := ParseEnviron(env)
		info.UID = uid
		return info, nil
	}
}

// statusUID is the real uid on the Uid: line of /proc/PID/status.
func statusUID(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Uid:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			break
		}
		uid, err := strconv.Atoi(fields[0])
		if err != nil || uid < 0 {
			break
		}
		return uid, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no Uid line", path)
}

// ParseEnviron reads a process's environment as /proc/PID/environ holds
// it (NUL-separated NAME=value) and keeps what ProcInfo names; UID is
// left 0. Unknown names, malformed entries and bad numbers are skipped.
func ParseEnviron(env []byte) ProcInfo {
	info := ProcInfo{Rank: -1, LocalRank: -1, WorldSize: -1}
	var elastic, slurm string
	for len(env) > 0 {
		var kv []byte
		if i := bytes.IndexByte(env, 0); i >= 0 {
			kv, env = env[:i], env[i+1:]
		} else {
			kv, env = env, nil
		}
		k, v, ok := bytes.Cut(kv, []byte("="))
		if !ok {
			continue
		}
		switch string(k) {
		case "RANK":
			info.Rank = envInt(v)
		case "LOCAL_RANK":
			info.LocalRank = envInt(v)
		case "WORLD_SIZE":
			info.WorldSize = envInt(v)
		case "TRAINSCOPE_RUN":
			info.Run = envString(v, 200)
		case "TORCHELASTIC_RUN_ID":
			elastic = envString(v, 200)
		case "SLURM_JOB_ID":
			slurm = envString(v, 200)
		case "KINETO_ONDEMAND_TRACE_DIR":
			info.TraceDir = envString(v, 4096)
		}
	}
	switch {
	case elastic != "" && elastic != "none":
		info.JobID = elastic
	case slurm != "":
		info.JobID = slurm
	}
	return info
}

// envInt is a rank-like number in 0..1<<24, else -1.
func envInt(v []byte) int {
	n, err := strconv.Atoi(strings.TrimSpace(string(v)))
	if err != nil || n < 0 || n > 1<<24 {
		return -1
	}
	return n
}

// envString is v when it is printable and at most max bytes, else "".
func envString(v []byte, max int) string {
	if len(v) > max {
		return ""
	}
	for _, c := range v {
		if c < 0x20 || c == 0x7f {
			return ""
		}
	}
	return string(v)
}

var errNotAllowed = errors.New("not an allowed user")
