//go:build !linux && !darwin

package main

// peakMemory is not known on this system.
func peakMemory() (int64, bool) { return 0, false }
