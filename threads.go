package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"github.com/trainscope/trainscope/internal/config"
)

// threadsFlag adds --threads to fs; applyThreads copies it into the config.
func threadsFlag(fs *pflag.FlagSet) *int {
	return fs.Int("threads", 0, "cores to plan for: files read at once, detectors side by side, DuckDB threads (default: the threads key, else GOMAXPROCS)")
}

// applyThreads puts a --threads value (0: not given) into c, checked as
// the threads key is.
func (c *Config) applyThreads(cmd string, n int) error {
	if n == 0 {
		return nil
	}
	if n < 0 || n > config.MaxThreads {
		return &usageError{fmt.Sprintf("%s: --threads %d: want 1 to %d", cmd, n, config.MaxThreads)}
	}
	c.Threads = n
	return nil
}
