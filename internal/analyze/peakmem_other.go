//go:build !linux && !darwin

package analyze

// peakMemory is not known on this system.
func peakMemory() (int64, bool) { return 0, false }
