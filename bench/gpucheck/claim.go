package main

import (
	"strings"

	"github.com/trainscope/trainscope/detectors"
)

// claimOf is the cause a report's verdict names first, in the scorer's
// words (none, stall, input, host, sync, copies, precision, launch,
// kernels, comm, late_rank, slow_host, slow_link, hang), and the verdict's
// own sentence for it: its first root cause where it has one, else the
// limiter its summary gives.
func claimOf(rep *detectors.Report) (claim, said string) {
	if len(rep.Causes) > 0 {
		c := rep.Causes[0]
		return causeClaim(c), c.Headline
	}
	for _, l := range rep.Summary {
		if l.Detector == "bottleneck_class" {
			return limiterClaim(l.Text), l.Text
		}
	}
	return "none", "no cause named"
}

// causeClaim maps a root cause to the scorer's words.
func causeClaim(c detectors.Cause) string {
	switch c.Kind {
	case "one_off_stall":
		return "stall"
	case "slow_kernel":
		return "kernels"
	case "hang", "slow_host", "slow_link":
		return c.Kind
	}
	switch c.Why {
	case "data_loader":
		return "input"
	case "sync", "launch", "copies", "host":
		return c.Why
	case "compute", "throttle":
		return "kernels"
	case "gc", "checkpoint":
		return "stall"
	}
	return "late_rank"
}

// limiterClaim maps bottleneck_class's limiter ("host-bound: ...") to the
// scorer's words; a GPU-bound run names no fault.
func limiterClaim(text string) string {
	class, _, _ := strings.Cut(text, ":")
	switch strings.TrimSpace(class) {
	case "communication-bound":
		return "comm"
	case "sync-bound":
		return "sync"
	case "launch-overhead-bound":
		return "launch"
	case "host-bound":
		return "host"
	}
	return "none"
}
