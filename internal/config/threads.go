package config

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// MaxThreads bounds the threads key and --threads: far above any machine's
// cores, low enough that a typo (--threads 100000) is refused instead of
// starting that many DuckDB threads.
const MaxThreads = 4096

// Cores is how many cores this trainscope plans for: the threads key
// (--threads, TRAINSCOPE_THREADS) when set, else GOMAXPROCS, which follows
// a container's CPU quota where runtime.NumCPU would count the host's.
// Every size taken from the core count derives from it: files read at
// once, detectors run side by side (each on a DuckDB connection of its
// own) and DuckDB's threads, unless duckdb.threads says otherwise.
func (c *Config) Cores() int {
	if c.Threads > 0 {
		return c.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// DuckThreads is DuckDB's thread count: duckdb.threads, else cores. Never
// DuckDB's own default, which counts the host's cores whatever the
// container's quota and the threads key say.
func (c *Config) DuckThreads() int {
	if c.DuckDB.Threads > 0 {
		return c.DuckDB.Threads
	}
	return c.Cores()
}

// MachineMemory is the memory this process may use, in bytes: the
// machine's (MemTotal), or its container's limit (cgroup v2 memory.max,
// v1 memory.limit_in_bytes) where that is less; 0 when neither is known.
func MachineMemory() int64 {
	var total int64
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64); err == nil && kb > 0 {
					total = kb << 10
				}
				break
			}
		}
		f.Close()
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// "max" (v2) or a huge number (v1) when there is no limit
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
		break
	}
	return total
}

// ParseSize reads a size like 256MB, 2GB or 512MiB (DuckDB's
// memory_limit syntax) in bytes.
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a size like 256MB or 1GiB", s)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size like 256MB or 1GiB", s)
	}
	unit := map[string]float64{"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[m[2]]
	return int64(f * unit), nil
}

var sizeRE = regexp.MustCompile(`^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$`)

// ReadMemoryBytes is the read_memory key in bytes: 0 when it is not set
// (ingest's default), as Validate has checked it.
func (c *Config) ReadMemoryBytes() int64 {
	n, _ := ParseSize(c.ReadMemory)
	return n
}
