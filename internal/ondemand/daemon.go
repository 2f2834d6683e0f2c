package ondemand

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// DefaultName is the abstract socket name libkineto sends to ("dynolog").
const DefaultName = "dynolog"

// Config configures a Daemon. The zero value serves @dynolog for this
// user's processes with DefaultLimits.
type Config struct {
	// Name is the socket's name: libkineto sends to "dynolog", so only
	// tests change it.
	Name string
	// SocketDir, when set, binds a socket file SocketDir/Name instead of
	// an abstract one: libkineto's KINETO_IPC_SOCKET_DIR, for processes
	// in another network namespace sharing that folder.
	SocketDir string
	// Host names this node in trace file names.
	Host string
	// DefaultRun is the run of a process that does not say its own with
	// TRAINSCOPE_RUN (the agent's --run). Without either a process's run
	// is its scheduler job id (TORCHELASTIC_RUN_ID, SLURM_JOB_ID).
	DefaultRun string
	// AllowUIDs are users besides the daemon's own whose processes it
	// serves. A process of any other user gets no config and is not
	// registered.
	AllowUIDs []int
	Limits    Limits
	// KeepAlive is how long a process stays registered without a poll
	// (libkineto polls every 5 s by default): 60 s, as dynolog.
	KeepAlive time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Inspect says who a process is (ProcFS("/proc") when nil).
	Inspect Inspector
	// Logf logs (nothing when nil): one line per capture, per refused
	// process and per run of malformed datagrams.
	Logf func(format string, args ...any)
	// OnEvent hears what happens, after the daemon's lock is released;
	// it runs on the goroutine that caused it (Serve's or Trigger's
	// caller) and must not block for long.
	OnEvent func(Event)
}

// Limits bound what a trigger may ask for.
type Limits struct {
	MaxSteps    int           // iterations of one capture (50)
	MaxDuration time.Duration // length of a duration capture (60 s)
	MaxWait     int           // step alignment (1000)
	// MaxStartDelay bounds how far ahead a duration capture's synchronized
	// start may lie (10 min).
	MaxStartDelay time.Duration
	// GPUBufferMB caps libkineto's activity buffer
	// (ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB; libkineto's default is 128).
	GPUBufferMB int
	// MaxTraceBytes is what a watcher should accept of one trace file
	// (1 GiB); the daemon reports it, the watcher enforces it.
	MaxTraceBytes int64
	// CaptureTimeout frees a run for its next capture when the last one
	// was neither finished nor delivered by then (10 min).
	CaptureTimeout time.Duration
	// MaxProcesses bounds the registry (4096).
	MaxProcesses int
}

// DefaultLimits are the limits a zero Limits field takes.
var DefaultLimits = Limits{
	MaxSteps:       50,
	MaxDuration:    60 * time.Second,
	MaxWait:        1000,
	MaxStartDelay:  10 * time.Minute,
	GPUBufferMB:    256,
	MaxTraceBytes:  1 << 30,
	CaptureTimeout: 10 * time.Minute,
	MaxProcesses:   4096,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxSteps > 0 {
		d.MaxSteps = l.MaxSteps
	}
	if l.MaxDuration > 0 {
		d.MaxDuration = l.MaxDuration
	}
	if l.MaxWait > 0 {
		d.MaxWait = l.MaxWait
	}
	if l.MaxStartDelay > 0 {
		d.MaxStartDelay = l.MaxStartDelay
	}
	if l.GPUBufferMB > 0 {
		d.GPUBufferMB = l.GPUBufferMB
	}
	if l.MaxTraceBytes > 0 {
		d.MaxTraceBytes = l.MaxTraceBytes
	}
	if l.CaptureTimeout > 0 {
		d.CaptureTimeout = l.CaptureTimeout
	}
	if l.MaxProcesses > 0 {
		d.MaxProcesses = l.MaxProcesses
	}
	return d
}

// Process is a registered PyTorch process.
type Process struct {
	PID        int   // as it reports itself (its pid namespace)
	HostPID    int   // the kernel's pid for it, 0 when not vouched for
	Ancestors  []int // its parents' pids as it reports them
	GPU        int   // from its registration, -1 when it only polled
	KinetoJob  int64 // libkineto's job id (SLURM_JOB_ID or 0)
	UID        int
	Rank       int // RANK, -1 unknown
	LocalRank  int // LOCAL_RANK, -1 unknown
	WorldSize  int // WORLD_SIZE, -1 unknown
	Run        string
	JobID      string // TORCHELASTIC_RUN_ID or SLURM_JOB_ID
	TraceDir   string // KINETO_ONDEMAND_TRACE_DIR
	Registered time.Time
	LastSeen   time.Time
}

// EventKind names what an Event reports.
type EventKind string

const (
	EventRegistered EventKind = "registered" // a process was admitted
	EventRefused    EventKind = "refused"    // a process was turned away (Err says why)
	EventForgotten  EventKind = "forgotten"  // a process stopped polling
	EventTriggered  EventKind = "triggered"  // a capture was queued (Capture)
	EventDelivered  EventKind = "delivered"  // a process took its config (Target: where its trace goes)
	EventEnded      EventKind = "ended"      // a capture finished or timed out (Capture)
	EventMalformed  EventKind = "malformed"  // a datagram was dropped (Err)
)

// Event is one thing that happened.
type Event struct {
	Kind    EventKind
	Run     string
	Process *Process
	Capture *Capture
	Target  *Target
	Err     error
}

type procKey struct{ hostPID, pid int }

type process struct {
	Process
	credUID    int    // the sender's uid as the kernel said, when it did
	pending    string // config text not yet taken
	pendingFor string // its capture id
}

// Daemon is the Go side of the Kineto daemon protocol: it registers the
// local PyTorch processes that announce themselves and hands them
// on-demand configs. Create it with New; it is safe for concurrent use.
type Daemon struct {
	cfg    Config
	lim    Limits
	selfID int

	mu        sync.Mutex
	procs     map[procKey]*process
	refused   map[procKey]time.Time // when last refused, so it is logged once
	active    map[string]*capture   // by run
	seq       int
	lastPrune time.Time
	stats     Stats
	conn      socket // set by Listen
}

// Stats counts datagrams by outcome.
type Stats struct {
	Registrations, Polls, Delivered, Refused, Malformed, Unknown int64
}

// New makes a daemon; Listen and Serve put it on the socket, Handle
// answers one datagram without it.
func New(cfg Config) *Daemon {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 60 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Inspect == nil {
		cfg.Inspect = ProcFS("/proc")
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	return &Daemon{
		cfg: cfg, lim: cfg.Limits.withDefaults(), selfID: os.Getuid(),
		procs: map[procKey]*process{}, refused: map[procKey]time.Time{}, active: map[string]*capture{},
	}
}

// Limits are the daemon's limits, defaults filled in.
func (d *Daemon) Limits() Limits { return d.lim }

// Stats counts what the daemon has answered so far.
func (d *Daemon) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Processes are the registered processes, by run then rank then pid.
func (d *Daemon) Processes() []Process {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.prune(d.cfg.Now(), nil)
	out := make([]Process, 0, len(d.procs))
	for _, p := range d.procs {
		out = append(out, p.copy())
	}
	slices.SortFunc(out, func(a, b Process) int {
		if a.Run != b.Run {
			if a.Run < b.Run {
				return -1
			}
			return 1
		}
		if a.Rank != b.Rank {
			return a.Rank - b.Rank
		}
		return a.PID - b.PID
	})
	return out
}

func (p *process) copy() Process {
	c := p.Process
	c.Ancestors = slices.Clone(p.Ancestors)
	return c
}

func (d *Daemon) allowed(uid int) bool {
	return uid == d.selfID || slices.Contains(d.cfg.AllowUIDs, uid)
}

func (d *Daemon) emit(evs []Event) {
	if d.cfg.OnEvent == nil {
		return
	}
	for _, e := range evs {
		d.cfg.OnEvent(e)
	}
}

// Handle answers one datagram from peer (Cred, HostPID and UID set when
// the kernel vouched for the sender; the rest is filled from the
// datagram). It returns the reply to send back, nil for none.
func (d *Daemon) Handle(b []byte, peer Peer) []byte {
	var evs []Event
	reply := d.handle(b, peer, &evs)
	d.emit(evs)
	return reply
}

func (d *Daemon) handle(b []byte, peer Peer, evs *[]Event) []byte {
	m, err := Decode(b)
	if err != nil {
		return d.malformed(err, evs)
	}
	switch m.Type {
	case TypeContext:
		c, err := DecodeContext(m.Payload)
		if err != nil {
			return d.malformed(err, evs)
		}
		peer.PID, peer.GPU, peer.JobID = int(c.PID), int(c.GPU), c.JobID
		d.mu.Lock()
		defer d.mu.Unlock()
		d.stats.Registrations++
		p := d.admit(peer, evs)
		if p == nil {
			return contextReply(-1)
		}
		if p.GPU < 0 {
			p.GPU = peer.GPU
		}
		n := int32(0)
		for _, q := range d.procs {
			if q.KinetoJob == p.KinetoJob && q.GPU == p.GPU {
				n++
			}
		}
		return contextReply(n)
	case TypeRequest:
		q, err := DecodePoll(m.Payload)
		if err != nil {
			return d.malformed(err, evs)
		}
		peer.PID, peer.JobID, peer.GPU = int(q.PIDs[0]), q.JobID, -1
		for _, a := range q.PIDs[1:] {
			peer.Ancestors = append(peer.Ancestors, int(a))
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		d.stats.Polls++
		p := d.admit(peer, evs)
		if p == nil || p.pending == "" || q.ConfigType&ConfigActivities == 0 {
			return configReply("")
		}
		return configReply(d.deliver(p, evs))
	default:
		d.mu.Lock()
		d.stats.Unknown++
		d.mu.Unlock()
		*evs = append(*evs, Event{Kind: EventMalformed, Err: fmt.Errorf("unknown message type %q", m.Type)})
		return nil
	}
}

func (d *Daemon) malformed(err error, evs *[]Event) []byte {
	d.mu.Lock()
	d.stats.Malformed++
	n := d.stats.Malformed
	d.mu.Unlock()
	if n == 1 || n%1000 == 0 {
		d.cfg.Logf("ondemand: dropped a malformed datagram (%d so far): %v", n, err)
	}
	*evs = append(*evs, Event{Kind: EventMalformed, Err: err})
	return nil
}

// admit finds or registers peer's process, nil when it is refused.
// d.mu is held.
func (d *Daemon) admit(peer Peer, evs *[]Event) *process {
	now := d.cfg.Now()
	d.prune(now, evs)
	key := procKey{pid: peer.PID}
	if peer.Cred {
		key.hostPID = peer.HostPID
	}
	if p := d.procs[key]; p != nil {
		// the same process, unless its pid was reused: another sender
		// uid, or another line of ancestors (dynolog keys a process by
		// its whole pid list)
		reused := (peer.Cred && peer.UID != p.credUID) ||
			(len(peer.Ancestors) > 0 && len(p.Ancestors) > 0 && !slices.Equal(peer.Ancestors, p.Ancestors))
		if !reused {
			p.LastSeen = now
			if len(peer.Ancestors) > 0 {
				p.Ancestors = peer.Ancestors
			}
			return p
		}
		delete(d.procs, key)
		c := p.copy()
		*evs = append(*evs, Event{Kind: EventForgotten, Run: p.Run, Process: &c})
	}
	if t, ok := d.refused[key]; ok && now.Sub(t) < d.cfg.KeepAlive {
		d.stats.Refused++
		return nil
	}
	refuse := func(err error) *process {
		d.stats.Refused++
		if len(d.refused) >= d.lim.MaxProcesses {
			clear(d.refused)
		}
		d.refused[key] = now
		d.cfg.Logf("ondemand: refused process %d (uid %d): %v", peer.PID, peer.UID, err)
		*evs = append(*evs, Event{Kind: EventRefused, Process: &Process{PID: peer.PID, HostPID: peer.HostPID, UID: peer.UID}, Err: err})
		return nil
	}
	if peer.Cred && !d.allowed(peer.UID) {
		return refuse(fmt.Errorf("sender uid %d: %w (this agent serves uid %d and %v)", peer.UID, errNotAllowed, d.selfID, d.cfg.AllowUIDs))
	}
	info, err := d.cfg.Inspect(peer)
	if err != nil {
		return refuse(fmt.Errorf("cannot inspect it: %w", err))
	}
	if !d.allowed(info.UID) {
		return refuse(fmt.Errorf("owned by uid %d: %w (this agent serves uid %d and %v)", info.UID, errNotAllowed, d.selfID, d.cfg.AllowUIDs))
	}
	if len(d.procs) >= d.lim.MaxProcesses {
		return refuse(fmt.Errorf("%d processes registered already", len(d.procs)))
	}
	delete(d.refused, key)
	run := info.Run
	if run == "" {
		run = d.cfg.DefaultRun
	}
	if run == "" {
		run = info.JobID
	}
	if run == "" && peer.JobID != 0 {
		run = fmt.Sprint(peer.JobID)
	}
	p := &process{Process: Process{
		PID: peer.PID, Ancestors: peer.Ancestors, GPU: peer.GPU, KinetoJob: peer.JobID, UID: info.UID,
		Rank: info.Rank, LocalRank: info.LocalRank, WorldSize: info.WorldSize,
		Run: run, JobID: info.JobID, TraceDir: info.TraceDir, Registered: now, LastSeen: now,
	}}
	if peer.Cred {
		p.HostPID, p.credUID = peer.HostPID, peer.UID
	}
	d.procs[key] = p
	c := p.copy()
	*evs = append(*evs, Event{Kind: EventRegistered, Run: run, Process: &c})
	return p
}

// prune forgets processes not heard for KeepAlive and ends captures past
// their deadline, at most once a second. d.mu is held.
func (d *Daemon) prune(now time.Time, evs *[]Event) {
	if now.Sub(d.lastPrune) < time.Second && !now.Before(d.lastPrune) {
		return
	}
	d.lastPrune = now
	for k, p := range d.procs {
		if now.Sub(p.LastSeen) > d.cfg.KeepAlive {
			delete(d.procs, k)
			if evs != nil {
				c := p.copy()
				*evs = append(*evs, Event{Kind: EventForgotten, Run: p.Run, Process: &c})
			}
		}
	}
	for run, c := range d.active {
		if now.After(c.Deadline) {
			d.end(run, c, "timed out", evs)
		}
	}
}
