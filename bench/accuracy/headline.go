package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/trainscope/trainscope/detectors/report"
)

// headline is what a report's headline claims: the fault type its top
// root cause stands for (clean when it blames nothing) and whether it put
// that cause at the injected place with the injected type.
type headline struct {
	claims FaultType
	right  bool
	text   string
}

// claimOf is the fault type a root cause stands for.
func claimOf(c report.Cause) FaultType {
	switch c.Kind {
	case "hang":
		return Hang
	case "slow_link":
		return SlowLink
	case "slow_host":
		return SlowHost
	}
	switch c.Why {
	case "compute":
		return SlowRank
	case "data_loader", "input":
		return DataStall
	case "sync":
		return SyncAPI
	case "copies":
		return PageableMemcpy
	case "launch":
		return LaunchBound
	}
	return FaultType("other:" + c.Why)
}

// headlineClaim scores the report's headline against the injected fault:
// right when its top cause has the fault's type and place (a clean run,
// and a launch overhead on every rank, must blame nothing).
func (f Fault) headlineClaim(t topology, causes []report.Cause) headline {
	if len(causes) == 0 {
		return headline{claims: Clean, right: f.clean() || f.Type == LaunchBound && f.Rank < 0, text: "balanced"}
	}
	c := causes[0]
	h := headline{claims: claimOf(c), text: c.Headline}
	switch f.Type {
	case Clean, Distractor:
		return h
	case SlowHost:
		h.right = c.Kind == "slow_host" && c.Host == hostName(f.Host)
	case LaunchBound:
		// every rank launch-bound: the run's launch overhead is the cause;
		// one rank: that rank, late for its launches
		if f.Rank < 0 {
			h.right = h.claims == LaunchBound && c.Kind == "launch_bound"
		} else {
			h.right = h.claims == LaunchBound && c.Rank != nil && *c.Rank == f.Rank
		}
	case SlowLink:
		var m []int
		for i := range t.tp {
			m = append(m, f.Group*t.tp+i)
		}
		h.right = c.Kind == "slow_link" && slices.Equal(c.Ranks, m)
	default:
		h.right = h.claims == f.Type && c.Rank != nil && *c.Rank == f.Rank
	}
	return h
}

// headlineTally is one row of the headline table.
type headlineTally struct{ scenarios, right, claimed, claimedRight int }

// writeHeadlines writes how often the headline names the injected root
// cause (place and type), per fault type, with precision over the
// headlines that claimed each type.
func writeHeadlines(w io.Writer, outs []outcome) {
	rows := map[FaultType]*headlineTally{}
	types := append([]FaultType{Clean, Distractor}, faultTypes...)
	for _, t := range types {
		rows[t] = &headlineTally{}
	}
	other := 0
	for _, o := range outs {
		if o.f.Also != nil {
			continue // in the two-fault table
		}
		rows[o.f.Type].scenarios++
		if o.headline.right {
			rows[o.f.Type].right++
		}
		if x, ok := rows[o.headline.claims]; ok {
			x.claimed++
			if o.headline.right {
				x.claimedRight++
			}
		} else {
			other++
		}
	}
	fmt.Fprintln(w, "| fault type | scenarios | headline right | recall | headlines claiming it | precision |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, t := range types {
		x := rows[t]
		fmt.Fprintf(w, "| %s | %d | %d | %.3f | %d | %.3f |\n", t, x.scenarios, x.right, ratio(x.right, x.scenarios), x.claimed, ratio(x.claimedRight, x.claimed))
	}
	if other > 0 {
		fmt.Fprintf(w, "\nHeadlines naming a cause that is none of these types: %d.\n", other)
	}
}

// writeDoubles writes how the headline fares on runs with two faults: it
// must name one of them first, and the causes must name both.
func writeDoubles(w io.Writer, outs []outcome) {
	n, right, both := 0, 0, 0
	for _, o := range outs {
		if o.f.Also == nil {
			continue
		}
		n++
		if o.headline.right {
			right++
		}
		if o.both {
			both++
		}
	}
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "| runs with two faults | headline names one of them | share | causes name both | share |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|")
	fmt.Fprintf(w, "| %d | %d | %.3f | %d | %.3f |\n", n, right, ratio(right, n), both, ratio(both, n))
}
