package detectors

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"

	"github.com/trainscope/trainscope/sql/duck"
)

// Cause is a root cause of lost step time: what holds a run back, what it
// costs every step, the evidence chain that names it, one fix, and the
// findings it explains. Causes are ranked by cost; the report's headline
// is the first.
type Cause struct {
	ID     string  `json:"id"`
	RunID  string  `json:"run_id"`
	Kind   string  `json:"kind"` // late_rank, one_off_stall, slow_host, hang, slow_link, slow_kernel
	Rank   *int    `json:"rank,omitempty"`
	Ranks  []int   `json:"ranks,omitempty"`
	Host   string  `json:"host,omitempty"`
	Step   *int    `json:"step,omitempty"`
	Why    string  `json:"why,omitempty"` // the late rank's own cause: data_loader, compute, throttle, sync, launch, copies, gc, checkpoint, host, unknown
	CostNS float64 `json:"cost_ns_per_step"`
	// AtNS is when the cause first held the others up: its rank's arrival
	// at the first collective it delayed (in the stall's step for a
	// one-off stall), on that rank's clock; 0 when unknown.
	AtNS int64 `json:"at_ns,omitempty"`
	// StallNS is a one-off stall's length in its step (CostNS spreads it
	// over the analysed steps).
	StallNS float64 `json:"stall_ns,omitempty"`
	CostPct float64 `json:"cost_pct_of_step"`
	// Headline says it in one sentence; Evidence is the chain behind it.
	Headline string   `json:"headline"`
	Evidence []string `json:"evidence"`
	Fix      string   `json:"fix,omitempty"`
	// Shown lists the findings that show this cause itself; Explains the
	// findings it accounts for (peers' waiting, idle, exposed time).
	Shown    []string `json:"shown_by,omitempty"`
	Explains []string `json:"explains,omitempty"`
	Waiters  []Waiter `json:"waiters,omitempty"`
	// Subject is what the time went to, for a cause from the step-time
	// account: the operator, Python frame or call (with its call Stack),
	// the copy kind, the kernel
	Subject string `json:"subject,omitempty"`
	Stack   string `json:"stack,omitempty"`
	finding string // the finding a slow_kernel cause comes from
	// from the account: the subject's key and stack id, what grew in a
	// stall, and a precision cause's ms a step in FP32, at TF32, at bf16
	subjectKey string
	stack      int32
	grew       float64
	precision  [3]float64
	share      float64
	peerMedian float64 // a rank outlier's peers' median, ns a step
	// rankOutlier: one rank of several losing more than its peers to it
	rankOutlier bool
	// gaps: idle the trace cannot explain, in short stretches (between
	// sparse events, not host work of its own): it never heads the verdict
	gaps bool
}

// heads says whether a cause may head the verdict.
func (c Cause) heads() bool { return !(c.Kind == "unrecorded_idle" && c.gaps) }

// Waiter is a peer and how long it waited for a late rank.
type Waiter struct {
	Rank   int     `json:"rank"`
	WaitNS float64 `json:"wait_ns"`
}

// lateInstance is one collective instance a rank held up, and what that
// rank did before it compared with its peers (the late_arrivals view).
type lateInstance struct {
	run, comm, collective, host, hostOp string
	step, seq, rank                     int
	hostStack                           *int64
	block, seg, peerSeg                 float64
	compute, mem, idle, pageable, hostX float64
	kernels, peerKernels                float64
	sync, peerSync                      float64
	at                                  int64 // its arrival, on its own clock
}

// Why a late rank was late, from its stretch before the collective against
// its peers': the part of its lateness each component explains.
var (
	loaderRE     = regexp.MustCompile(`(?i)dataloader|data_loader|__next__|enumerate\(|_next_data|prefetch|collate|get_batch`)
	gcRE         = regexp.MustCompile(`(?i)(^|[^a-z])gc([^a-z]|$)|garbage|gc\.collect`)
	checkpointRE = regexp.MustCompile(`(?i)checkpoint|torch\.save|save_state|state_dict|serialization`)
)

func (l lateInstance) why() string {
	lateness := l.block
	switch {
	case l.seg-l.peerSeg < 0.3*lateness:
		// it spent no longer than its peers since its last collective: it
		// was late because that one ended late (its lateness came from
		// upstream), not because of anything it did
		return "propagated"
	case l.pageable >= 0.5*lateness || l.mem >= 0.5*lateness:
		return "copies"
	case l.kernels >= 1.5*l.peerKernels+20 && (l.compute+l.idle) >= 0.5*lateness:
		// many more kernels than its peers ran in the same stretch: the
		// cost is their launches (and their own short runs), not slower
		// kernels
		return "launch"
	case l.compute >= 0.5*lateness:
		return "compute"
	case l.hostX >= 0.3*lateness && loaderRE.MatchString(l.hostOp):
		return "data_loader"
	case l.idle >= 0.3*lateness && l.sync > l.peerSync:
		return "sync"
	case l.hostX >= 0.3*lateness && checkpointRE.MatchString(l.hostOp):
		return "checkpoint"
	case l.hostX >= 0.3*lateness && gcRE.MatchString(l.hostOp):
		return "gc"
	case l.idle >= 0.5*lateness:
		return "host"
	}
	return "unknown"
}

// whyText says a cause in words, for the headline.
var whyText = map[string]string{
	"data_loader": "its data loading stalls",
	"compute":     "its kernels run slower than its peers'",
	"sync":        "it synchronizes with the GPU where its peers do not",
	"launch":      "it launches many more small kernels than its peers, and the GPU waits for the launches",
	"copies":      "its host-device copies take longer (pageable memory)",
	"gc":          "Python garbage collection stalls it",
	"checkpoint":  "checkpointing stalls it",
	"host":        "its host is busy while its GPU idles",
	"throttle":    "its GPU throttles",
	"unknown":     "of something its trace does not show (its stretch before the collectives is longer, but neither its kernels nor its host account for it)",
}

// whyFix is the one fix for each kind of lateness.
var whyFix = map[string]string{
	"data_loader": "make the input pipeline keep ahead of the GPU on this rank: more DataLoader workers, persistent_workers=True, prefetch_factor, pin_memory; check this rank's shard (larger samples) and the storage it reads from",
	"compute":     "find why this GPU is slower than its peers: clocks, power cap and temperature (DCGM), ECC/XID errors, another process on the GPU; if it persists, drain the node",
	"throttle":    "cool or power the GPU back to its clocks (temperature, fans and airflow; its power limit against its peers'); if it persists, drain the node and have the GPU serviced",
	"sync":        "remove the synchronizing calls from this rank's step (.item(), .cpu(), torch.cuda.synchronize(), blocking copies): record events and read them later",
	"launch":      "launch fewer, larger kernels on this rank: fuse with torch.compile or capture the step with CUDA graphs; avoid per-element Python loops over tensors",
	"copies":      "pin this rank's host buffers (pin_memory=True, tensor.pin_memory()) and copy with non_blocking=True",
	"gc":          "take garbage collection off the step: gc.freeze() after setup, gc.disable() with a gc.collect() every N steps on all ranks at once",
	"checkpoint":  "checkpoint asynchronously (torch.distributed.checkpoint async_save) or on all ranks at the same step, so that peers do not wait for one",
	"host":        "look at this rank's host work in the stretch before its late collectives (the call stack named below): move it off the step's critical path or make it cheaper",
	"unknown":     "compare this rank's trace with a peer's around its late collectives; check its host's CPU load and NUMA placement",
}

// buildCauses finds the root causes of each run's lost step time and links
// the findings they explain.
func (r *Report) buildCauses(ctx context.Context, st *duck.Store) error {
	lates, err := loadLate(ctx, st)
	if err != nil {
		return err
	}
	steps, err := windowSteps(ctx, st)
	if err != nil {
		return err
	}
	waiters, err := loadWaiters(ctx, st)
	if err != nil {
		return err
	}
	accounts, err := loadAccount(ctx, st)
	if err != nil {
		return err
	}
	for i := range r.Findings {
		r.Findings[i].ID = fmt.Sprintf("f%d", i+1)
	}
	r.medianStep = map[string]float64{}
	for _, run := range r.Runs {
		sw := steps[run.RunID]
		r.medianStep[run.RunID] = sw.medianNS
		var causes []Cause
		causes = append(causes, r.lateCauses(run.RunID, lates, sw, waiters)...)
		causes = append(causes, r.findingCauses(run.RunID, sw)...)
		causes = mergeSlowHost(r, run.RunID, causes, sw)
		more, err := r.accountCauses(ctx, st, run.RunID, accounts[run.RunID], causes)
		if err != nil {
			return err
		}
		causes = append(causes, more...)
		r.hardwareCauses(run.RunID, causes)
		// costliest first; idle the trace cannot explain comes after every
		// cause it can (the verdict names what is known, and says when the
		// unknown costs more), and in short stretches never heads at all
		slices.SortStableFunc(causes, func(a, b Cause) int {
			return cmp.Or(cmp.Compare(boolInt(a.Kind == "unrecorded_idle"), boolInt(b.Kind == "unrecorded_idle")), cmp.Compare(b.CostNS, a.CostNS))
		})
		for i := range causes {
			causes[i].ID = fmt.Sprintf("c%d", len(r.Causes)+i+1)
		}
		r.linkFindings(run.RunID, causes, waiters)
		r.Causes = append(r.Causes, causes...)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// stepWindow is a run's analysed steps and their median duration.
type stepWindow struct {
	steps    int
	medianNS float64
}

func windowSteps(ctx context.Context, st *duck.Store) (map[string]stepWindow, error) {
	// the steps as the account measures them on the GPU timeline, where
	// it has them (the report's one step length), else the host's ranges
	byRun, err := st.QueryByKey(ctx, `
		WITH acct AS (SELECT DISTINCT run_id, rank, step, start_ns, end_ns FROM step_account),
		s AS (SELECT * FROM acct UNION ALL
		      SELECT run_id, rank, step, start_ns, end_ns FROM steps x
		      WHERE NOT EXISTS (SELECT 1 FROM acct a WHERE a.run_id = x.run_id AND a.rank = x.rank))
		SELECT s.run_id, count(DISTINCT s.step)::DOUBLE, median(s.end_ns - s.start_ns)::DOUBLE
		FROM s JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
		WHERE (w.step_lo IS NULL OR s.step >= w.step_lo) AND (w.step_hi IS NULL OR s.step <= w.step_hi)
		GROUP BY s.run_id`, 2)
	if err != nil {
		return nil, err
	}
	out := map[string]stepWindow{}
	for run, v := range byRun {
		out[run] = stepWindow{steps: int(v[0]), medianNS: v[1]}
	}
	return out, nil
}

func loadLate(ctx context.Context, st *duck.Store) ([]lateInstance, error) {
	rows, err := st.Query(ctx, `
		SELECT run_id, comm, collective, coalesce(host, ''), coalesce(host_op, ''), coalesce(step, -1), seq, rank, host_stack_id,
		       block_ns, seg_ns, peer_seg_ns, compute_excess_ns, mem_excess_ns, idle_excess_ns, pageable_excess_ns, host_excess_ns,
		       kernels, peer_kernels, sync_calls, peer_sync_calls, arrival_ts
		FROM late_arrivals ORDER BY run_id, step, rank, comm, seq`)
	if err != nil {
		return nil, fmt.Errorf("late arrivals: %w", err)
	}
	defer rows.Close()
	var out []lateInstance
	for rows.Next() {
		var l lateInstance
		if err := rows.Scan(&l.run, &l.comm, &l.collective, &l.host, &l.hostOp, &l.step, &l.seq, &l.rank, &l.hostStack,
			&l.block, &l.seg, &l.peerSeg, &l.compute, &l.mem, &l.idle, &l.pageable, &l.hostX,
			&l.kernels, &l.peerKernels, &l.sync, &l.peerSync, &l.at); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// waitKey is a late rank of a run.
type waitKey struct {
	run  string
	rank int
}

// loadWaiters is, per late rank, how long each peer waited for it.
func loadWaiters(ctx context.Context, st *duck.Store) (map[waitKey][]Waiter, error) {
	rows, err := st.Query(ctx, `
		WITH late AS (SELECT run_id, comm, step, seq, rank AS late_rank FROM collective_instances WHERE is_last AND block_ns > 0)
		SELECT c.run_id, l.late_rank, c.rank, sum(c.wait_ns)
		FROM collective_instances c
		JOIN late l ON l.run_id = c.run_id AND l.comm = c.comm AND l.step IS NOT DISTINCT FROM c.step AND l.seq = c.seq
		WHERE c.rank <> l.late_rank
		GROUP BY ALL ORDER BY 1, 2, 4 DESC, 3`)
	if err != nil {
		return nil, fmt.Errorf("waiters: %w", err)
	}
	defer rows.Close()
	out := map[waitKey][]Waiter{}
	for rows.Next() {
		var k waitKey
		var w Waiter
		if err := rows.Scan(&k.run, &k.rank, &w.Rank, &w.WaitNS); err != nil {
			return nil, err
		}
		out[k] = append(out[k], w)
	}
	return out, rows.Err()
}

// Title names the cause's kind in words ("late rank", "slow link").
func (c Cause) Title() string { return causeTitle[c.Kind] }

var causeTitle = map[string]string{"late_rank": "late rank", "one_off_stall": "one-off stall", causeSlowHost: "slow host",
	causeHang: "hang", causeSlowLink: "slow link", "slow_kernel": "slow kernel", "sync": "synchronization", "input_bound": "input-bound",
	"host_bound": "host-bound", "launch_bound": "launch-bound", "unrecorded_idle": "idle outside the trace", "copies": "copies",
	"precision": "precision", "memory_bound": "memory-bound work"}
