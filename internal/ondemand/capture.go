package ondemand

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Request asks every registered process of a run (or some of them) to
// trace.
type Request struct {
	// ID names the capture (TriggerMessage.ID, so every agent of the run
	// names its traces alike); "" makes one. Letters, digits, '-', '_', at
	// most 64 bytes.
	ID  string
	Run string
	// PIDs narrows the capture to the processes with these pids (as they
	// report them, or the kernel's, or an ancestor's, as dynolog matches);
	// empty means all of the run's.
	PIDs []int
	// Steps > 0 traces that many iterations, starting on the next step
	// number that is a multiple of Wait (1 when 0), so all ranks trace the
	// same steps. Else Duration is traced, from StartAt when set.
	Steps    int
	Wait     int
	Duration time.Duration
	StartAt  time.Time
	// OutputDir is where the traces go: the folder the agent watches.
	// libkineto since 2026-06 writes on-demand traces only under /tmp/ or
	// the process's KINETO_ONDEMAND_TRACE_DIR, elsewhere to its default
	// file; Target.Paths lists both then.
	OutputDir string
	Toggles
	// By says who asked, for the log line ("cli alice@laptop", "serve
	// 10.0.0.7", "auto sm_clock_drop").
	By string
}

// Target is one process of a capture.
type Target struct {
	PID, HostPID               int
	Rank, LocalRank, WorldSize int // -1 unknown
	// Paths are the files its trace may land in, the likeliest first:
	// one, or two when libkineto may ignore the requested directory.
	Paths []string
	// Config is the text it is handed.
	Config string
	// Delivered is when it took its config (zero until then).
	Delivered time.Time
}

// Capture is one on-demand trace of a run.
type Capture struct {
	ID        string
	Run       string
	By        string
	Requested time.Time
	// Deadline frees the run for another capture if this one was not
	// finished (Finish) by then.
	Deadline time.Time
	Steps    int
	Wait     int
	Duration time.Duration
	StartAt  time.Time
	Toggles
	OutputDir string
	// MaxTraceBytes is what a watcher should accept of each trace.
	MaxTraceBytes int64
	Targets       []Target
}

type capture struct {
	Capture
	ended bool
}

func (c *capture) copy() *Capture {
	out := c.Capture
	out.Targets = slices.Clone(c.Targets)
	for i := range out.Targets {
		out.Targets[i].Paths = slices.Clone(c.Targets[i].Paths)
	}
	return &out
}

// Errors Trigger wraps, for errors.Is.
var (
	ErrBusy        = errors.New("a capture of this run is in flight")
	ErrNoProcesses = errors.New("no registered process of this run")
	ErrInvalid     = errors.New("invalid capture request")
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// CheckID says whether id can name a capture.
func CheckID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("capture id %q: want 1 to 64 bytes", id)
	}
	if fileToken(id) != id {
		return fmt.Errorf("capture id %q: only letters, digits, '-' and '_'", id)
	}
	return nil
}

// check validates r against the limits at now.
func (l Limits) check(r Request, now time.Time) error {
	switch {
	case r.Run == "":
		return invalid("no run")
	case len(r.Run) > 200:
		return invalid("run id of %d bytes", len(r.Run))
	case r.Steps < 0 || r.Wait < 0 || r.Duration < 0:
		return invalid("steps %d, wait %d, duration %v: none may be negative", r.Steps, r.Wait, r.Duration)
	case r.Steps > 0 && r.Duration > 0:
		return invalid("both steps (%d) and a duration (%v): ask for one", r.Steps, r.Duration)
	case r.Steps == 0 && r.Duration == 0:
		return invalid("neither steps nor a duration")
	case r.Steps > l.MaxSteps:
		return invalid("%d steps, at most %d", r.Steps, l.MaxSteps)
	case r.Duration > l.MaxDuration:
		return invalid("a %v capture, at most %v", r.Duration, l.MaxDuration)
	case r.Duration > 0 && r.Duration < time.Millisecond:
		return invalid("a %v capture, at least 1ms", r.Duration)
	case r.Wait > l.MaxWait:
		return invalid("wait %d steps, at most %d", r.Wait, l.MaxWait)
	case r.Steps > 0 && !r.StartAt.IsZero():
		return invalid("a start time is for duration captures; steps start on a multiple of wait")
	case !r.StartAt.IsZero() && r.StartAt.Before(now):
		return invalid("start time %s is past", r.StartAt.Format(time.RFC3339))
	case !r.StartAt.IsZero() && r.StartAt.Sub(now) > l.MaxStartDelay:
		return invalid("start time %s is more than %v ahead", r.StartAt.Format(time.RFC3339), l.MaxStartDelay)
	case len(r.By) > 200:
		return invalid("requester of %d bytes", len(r.By))
	}
	if r.ID != "" {
		if err := CheckID(r.ID); err != nil {
			return invalid("%v", err)
		}
	}
	if err := CheckOutputDir(r.OutputDir); err != nil {
		return invalid("%v", err)
	}
	return nil
}

// Trigger queues an on-demand config for each registered process of
// r.Run (each takes it on its next poll, within libkineto's 5 s poll
// period) and returns the capture with the trace files to expect. It
// refuses a request over the limits, a run with no process, and a run
// whose previous capture is still in flight (ErrBusy).
func (d *Daemon) Trigger(r Request) (*Capture, error) {
	var evs []Event
	c, err := d.trigger(r, &evs)
	d.emit(evs)
	return c, err
}

func (d *Daemon) trigger(r Request, evs *[]Event) (*Capture, error) {
	now := d.cfg.Now()
	if err := d.lim.check(r, now); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.prune(now, evs)
	if c := d.active[r.Run]; c != nil {
		if !now.After(c.Deadline) {
			return nil, fmt.Errorf("run %s: %w: capture %s (asked by %s at %s) until it finishes or %s",
				r.Run, ErrBusy, c.ID, orUnknown(c.By), c.Requested.Format(time.RFC3339), c.Deadline.Format(time.RFC3339))
		}
		d.end(r.Run, c, "timed out", evs)
	}
	var procs []*process
	runs := map[string]int{}
	for _, p := range d.procs {
		runs[p.Run]++
		if p.Run == r.Run && (len(r.PIDs) == 0 || matchPID(p, r.PIDs)) {
			procs = append(procs, p)
		}
	}
	if len(procs) == 0 {
		return nil, fmt.Errorf("run %s: %w (pids %v; registered: %s)", r.Run, ErrNoProcesses, r.PIDs, describeRuns(runs))
	}
	slices.SortFunc(procs, func(a, b *process) int {
		if a.Rank != b.Rank {
			return a.Rank - b.Rank
		}
		return a.PID - b.PID
	})
	d.seq++
	id := r.ID
	if id == "" {
		id = "od" + strconv.FormatInt(now.UnixMilli(), 10) + "-" + strconv.Itoa(d.seq)
	}
	c := &capture{Capture: Capture{
		ID: id, Run: r.Run, By: r.By, Requested: now, Deadline: now.Add(d.lim.CaptureTimeout),
		Steps: r.Steps, Wait: r.Wait, Duration: r.Duration, StartAt: r.StartAt, Toggles: r.Toggles,
		OutputDir: filepath.Clean(r.OutputDir), MaxTraceBytes: d.lim.MaxTraceBytes,
	}}
	var fallback []string
	for _, p := range procs {
		who := "pid" + strconv.Itoa(p.PID)
		if p.Rank >= 0 {
			who = "rank" + strconv.Itoa(p.Rank)
		}
		// the rank first: ingest takes the first rank a file name
		// claims, and a host may be named like one (gpu-worker-3)
		logFile := filepath.Join(c.OutputDir, who+"_"+fileToken(d.cfg.Host)+"_"+id+".pt.trace.json")
		t := Target{PID: p.PID, HostPID: p.HostPID, Rank: p.Rank, LocalRank: p.LocalRank, WorldSize: p.WorldSize,
			Config: kinetoConfig(logFile, id, r.Steps, r.Wait, r.Duration, r.StartAt, d.lim.GPUBufferMB, r.Toggles)}
		if libkinetoAccepts(logFile, p.TraceDir) {
			t.Paths = []string{TracePath(logFile, p.PID)}
		} else {
			t.Paths = []string{DefaultTracePath(p.PID), TracePath(logFile, p.PID)}
			fallback = append(fallback, strconv.Itoa(p.PID))
		}
		p.pending, p.pendingFor = t.Config, id
		c.Targets = append(c.Targets, t)
	}
	d.active[r.Run] = c
	d.cfg.Logf("ondemand: capture %s of run %s asked by %s: %d process(es) [%s], %s, traces to %s (%s)%s",
		id, r.Run, orUnknown(r.By), len(procs), describeTargets(c.Targets), describeLength(r), c.OutputDir,
		describeToggles(r.Toggles), describeFallback(fallback))
	*evs = append(*evs, Event{Kind: EventTriggered, Run: r.Run, Capture: c.copy()})
	return c.copy(), nil
}

// deliver hands p its pending config. d.mu is held.
func (d *Daemon) deliver(p *process, evs *[]Event) string {
	cfg := p.pending
	p.pending, p.pendingFor = "", ""
	d.stats.Delivered++
	c := d.active[p.Run]
	if c == nil {
		return cfg
	}
	for i := range c.Targets {
		t := &c.Targets[i]
		if t.PID == p.PID && t.HostPID == p.HostPID && t.Config == cfg {
			t.Delivered = d.cfg.Now()
			tc := *t
			tc.Paths = slices.Clone(t.Paths)
			*evs = append(*evs, Event{Kind: EventDelivered, Run: p.Run, Capture: c.copy(), Target: &tc})
		}
	}
	return cfg
}

// Active is the run's capture in flight.
func (d *Daemon) Active(run string) (*Capture, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.active[run]
	if c == nil || d.cfg.Now().After(c.Deadline) {
		return nil, false
	}
	return c.copy(), true
}

// Finish ends capture id of run: its traces were published (or given up
// on), so the run may be captured again. Processes that had not taken
// their config yet will not get it.
func (d *Daemon) Finish(run, id string) error {
	var evs []Event
	d.mu.Lock()
	c := d.active[run]
	if c == nil || c.ID != id {
		d.mu.Unlock()
		return fmt.Errorf("run %s has no capture %s in flight", run, id)
	}
	d.end(run, c, "finished", &evs)
	d.mu.Unlock()
	d.emit(evs)
	return nil
}

// end retires the run's capture c, withdrawing configs not yet taken.
// d.mu is held.
func (d *Daemon) end(run string, c *capture, why string, evs *[]Event) {
	delete(d.active, run)
	withdrawn := 0
	for _, p := range d.procs {
		if p.pendingFor == c.ID && p.Run == run {
			p.pending, p.pendingFor = "", ""
			withdrawn++
		}
	}
	got := 0
	for _, t := range c.Targets {
		if !t.Delivered.IsZero() {
			got++
		}
	}
	d.cfg.Logf("ondemand: capture %s of run %s %s: %d of %d process(es) took the config, %d withdrawn", c.ID, run, why, got, len(c.Targets), withdrawn)
	if evs != nil {
		*evs = append(*evs, Event{Kind: EventEnded, Run: run, Capture: c.copy()})
	}
}

func matchPID(p *process, pids []int) bool {
	for _, want := range pids {
		if want == p.PID || (p.HostPID != 0 && want == p.HostPID) || slices.Contains(p.Ancestors, want) {
			return true
		}
	}
	return false
}

func orUnknown(s string) string {
	if s == "" {
		return "(unnamed)"
	}
	return s
}

func describeRuns(runs map[string]int) string {
	if len(runs) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(runs))
	for k := range runs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("run %q: %d", k, runs[k]))
	}
	return strings.Join(parts, ", ")
}

func describeTargets(ts []Target) string {
	parts := make([]string, 0, len(ts))
	for i, t := range ts {
		if i == 16 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ts)-i))
			break
		}
		rank := "?"
		if t.Rank >= 0 {
			rank = strconv.Itoa(t.Rank)
		}
		parts = append(parts, fmt.Sprintf("pid %d rank %s", t.PID, rank))
	}
	return strings.Join(parts, ", ")
}

func describeLength(r Request) string {
	if r.Steps > 0 {
		w := r.Wait
		if w < 1 {
			w = 1
		}
		return fmt.Sprintf("%d step(s) from the next step that is a multiple of %d", r.Steps, w)
	}
	if !r.StartAt.IsZero() {
		return fmt.Sprintf("%v from %s", r.Duration, r.StartAt.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("%v once each process is ready", r.Duration)
}

func describeToggles(t Toggles) string {
	var on []string
	for _, x := range []struct {
		on   bool
		name string
	}{{t.Shapes, "shapes"}, {t.Stacks, "stacks"}, {t.Memory, "memory"}, {t.Flops, "flops"}, {t.Modules, "modules"}} {
		if x.on {
			on = append(on, x.name)
		}
	}
	if len(on) == 0 {
		return "no shapes, stacks or memory"
	}
	return "with " + strings.Join(on, ", ")
}

func describeFallback(pids []string) string {
	if len(pids) == 0 {
		return ""
	}
	return fmt.Sprintf("; pid(s) %s may write to /tmp/libkineto_activities_<pid>.json instead: the folder is outside /tmp/ and their KINETO_ONDEMAND_TRACE_DIR", strings.Join(pids, ","))
}

// Captures are the captures in flight, by run.
func (d *Daemon) Captures() []*Capture {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.Now()
	var out []*Capture
	for _, c := range d.active {
		if !now.After(c.Deadline) {
			out = append(out, c.copy())
		}
	}
	slices.SortFunc(out, func(a, b *Capture) int { return strings.Compare(a.Run, b.Run) })
	return out
}

// Answer carries out a trigger message for an agent whose traces for
// m.Run go to outputDir, and says what happened: the agent's NATS
// handler decodes (DecodeTrigger), answers with this, and replies.
func (d *Daemon) Answer(m TriggerMessage, outputDir string) TriggerReply {
	c, err := d.Trigger(m.Request(outputDir))
	return ReplyFor(d.cfg.Host, m.Run, c, err)
}

// Find is where t's trace is: the first of its Paths that exists, looked
// up as is, then, for a process the kernel named (HostPID), through
// procRoot/<HostPID>/root, which reaches into a container's own /tmp
// (procRoot is "/proc"). stat is os.Stat in the agent, a fake in tests.
func (t Target) Find(procRoot string, stat func(string) (os.FileInfo, error)) (string, bool) {
	for _, p := range t.Paths {
		if _, err := stat(p); err == nil {
			return p, true
		}
	}
	if t.HostPID > 0 && procRoot != "" {
		for _, p := range t.Paths {
			hp := filepath.Join(procRoot, strconv.Itoa(t.HostPID), "root", p)
			if _, err := stat(hp); err == nil {
				return hp, true
			}
		}
	}
	return "", false
}
