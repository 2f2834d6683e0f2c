//go:build linux || darwin

package analyze

import (
	"runtime"
	"syscall"
)

// peakMemory is the most memory the process has held at once (its peak
// resident set, as /usr/bin/time reports it), in bytes.
func peakMemory() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss), true // bytes there
	}
	return int64(ru.Maxrss) * 1024, true // kilobytes on Linux
}
