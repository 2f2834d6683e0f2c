package main

import (
	"github.com/trainscope/trainscope/detectors/report"
)

// claimOf is the cause a report's verdict names first, in the scorer's
// words (none, stall, input, host, sync, copies, precision, launch,
// memory_bound, kernels, late_rank, slow_host, slow_link, hang, no_gpu_work,
// memory_only), and the verdict's own sentence: the report's headline and
// the root cause it names.
func claimOf(rep *report.Report) (claim, said string) {
	if len(rep.Headline) == 0 {
		return "none", "no headline"
	}
	h := rep.Headline[0]
	for _, c := range rep.Causes {
		if c.ID == h.Cause {
			return causeClaim(c), h.Text
		}
	}
	return h.Kind, h.Text
}

// causeClaim maps a root cause to the scorer's words.
func causeClaim(c report.Cause) string {
	switch c.Kind {
	case "one_off_stall":
		return "stall"
	case "slow_kernel":
		return "kernels"
	case "input_bound":
		return "input"
	case "host_bound":
		return "host"
	case "launch_bound":
		return "launch"
	case "sync", "copies", "precision", "memory_bound", "hang", "slow_host", "slow_link":
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
