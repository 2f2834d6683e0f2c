package report

// Kinds of root cause that share their name with the detector that finds
// them (a detector's cause header names them too).
const (
	KindHang     = "hang"
	KindSlowLink = "slow_link"
	KindSlowHost = "slow_host"
)

// Cause is a root cause of lost step time: what holds a run back, what it
// costs every step, the evidence chain that names it, one fix, and the
// findings it explains. Causes are ranked by cost; the report's headline
// is the first.
type Cause struct {
	ID     string  `json:"id"`
	RunID  string  `json:"run_id"`
	Kind   string  `json:"kind"` // late_rank, one_off_stall, slow_host, hang, slow_link, slow_kernel, memory_bound, precision, comm_bound, and the step account's (sync, input_bound, host_bound, launch_bound, unrecorded_idle, copies)
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
}

// Waiter is a peer and how long it waited for a late rank.
type Waiter struct {
	Rank   int     `json:"rank"`
	WaitNS float64 `json:"wait_ns"`
}

// Title names the cause's kind in words ("late rank", "slow link").
func (c Cause) Title() string { return causeTitle[c.Kind] }

var causeTitle = map[string]string{"late_rank": "late rank", "one_off_stall": "one-off stall", KindSlowHost: "slow host",
	KindHang: "hang", KindSlowLink: "slow link", "slow_kernel": "slow kernel", "sync": "synchronization", "input_bound": "input-bound",
	"host_bound": "host-bound", "launch_bound": "launch-bound", "unrecorded_idle": "idle outside the trace", "copies": "copies",
	"precision": "precision", "memory_bound": "memory-bound work", "comm_bound": "exposed communication"}
