package odwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trainscope/trainscope/ingest/watch"
	"github.com/trainscope/trainscope/internal/agent"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/ondemand"
)

// Source is the agent's on-demand capture (agent.Source): it serves the
// Kineto daemon protocol to the local PyTorch processes, hears the
// triggers of its run (or, with Run empty, of every run its processes
// name) on NATS, answers each, and publishes the traces the processes
// write, with each process's rank, then frees the run for its next
// capture.
type Source struct {
	// Run is the agent's --run: the run of a process that names none, and
	// the only run whose triggers it answers. Empty (--runs-in): the runs
	// its processes name, answering only those it has processes of.
	Run string
	// Enable turns it on (--on-demand) whatever agent.on_demand.enabled
	// says; Dir overrides agent.on_demand.dir (--on-demand-dir). Off, it
	// does nothing until the agent stops.
	Enable bool
	Dir    string

	// Test hooks: the daemon's socket name, /proc, the clock.
	Name     string
	Inspect  ondemand.Inspector
	ProcRoot string
	Now      func() time.Time
	// OnCapture hears each capture's end (tests).
	OnCapture func(Result)

	cfg          config.OnDemandConfig
	dir          string // the traces folder, as prepared
	poll, settle time.Duration
}

// Result is what became of one capture on this agent.
type Result struct {
	Capture   *ondemand.Capture
	Published []string // trace files published, as found
	Failed    []string // "rank R (pid P): why", for the others
}

// DefaultDir is where the processes write their traces without
// agent.on_demand.dir: under /tmp/, which libkineto accepts without
// KINETO_ONDEMAND_TRACE_DIR, and the agent's own.
func DefaultDir() string {
	return filepath.Join(os.TempDir(), "trainscope-ondemand-"+strconv.Itoa(os.Getuid()))
}

func (s *Source) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// Limits are the daemon's limits from agent.on_demand.
func Limits(c config.OnDemandConfig) ondemand.Limits {
	return ondemand.Limits{MaxSteps: c.MaxSteps, MaxDuration: c.MaxDuration,
		MaxTraceBytes: c.MaxTraceMB << 20, CaptureTimeout: c.Timeout}
}

// Watch serves the processes and the triggers until ctx ends. It fails
// at once when the socket is taken (dynolog, another agent) or the
// folder is not the agent's. With once there is nothing to capture.
func (s *Source) Watch(ctx context.Context, n agent.Node, once bool) error {
	s.cfg = n.Config.Agent.OnDemand
	s.poll, s.settle = n.Config.Agent.Poll, n.Config.Agent.Settle
	if s.Enable {
		s.cfg.Enabled = true
	}
	if s.Dir != "" {
		s.cfg.Dir = s.Dir
	}
	if once {
		return nil
	}
	if !s.cfg.Enabled {
		<-ctx.Done() // the agent's other sources go on
		return nil
	}
	if n.Conn == nil || n.PublishCapture == nil {
		return errors.New("on-demand: the agent gave no NATS connection or publisher")
	}
	dir := s.cfg.Dir
	if dir == "" {
		dir = DefaultDir()
	}
	dir, err := prepareDir(dir, len(s.cfg.AllowUIDs) > 0)
	s.dir = dir
	if err != nil {
		return fmt.Errorf("on-demand: %w", err)
	}
	d := ondemand.New(ondemand.Config{Name: s.Name, SocketDir: s.cfg.SocketDir, Host: n.Host, DefaultRun: s.Run,
		AllowUIDs: s.cfg.AllowUIDs, Limits: Limits(s.cfg), Now: s.Now, Inspect: s.Inspect, Logf: n.Logf})
	if err := d.Listen(); err != nil {
		return fmt.Errorf("on-demand: %w; stop it, or run the agent without --on-demand", err)
	}
	cluster := n.Config.Stream.Cluster
	subject := ondemand.TriggerSubjectAll(cluster)
	if s.Run != "" {
		subject = ondemand.TriggerSubject(cluster, s.Run)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	sub, err := n.Conn.Subscribe(subject, func(msg *nats.Msg) {
		if ctx.Err() != nil {
			return // stopping: no capture it would not collect
		}
		if c := s.answer(d, n, dir, msg); c != nil {
			wg.Go(func() { s.collect(ctx, d, n, c) })
		}
	})
	if err == nil {
		err = n.Conn.Flush()
	}
	// a refused subscription comes back before the answer to the flush
	if last := n.Conn.LastError(); err == nil && errors.Is(last, nats.ErrPermissionViolation) && strings.Contains(last.Error(), subject) {
		err = fmt.Errorf("%w (the agent's NATS user must be allowed to subscribe to trainscope-trigger.> and to answer; serve's embedded NATS allows its publishers)", last)
	}
	if err != nil {
		if sub != nil {
			sub.Unsubscribe()
		}
		d.Serve(ctxDone()) // closes the socket
		return fmt.Errorf("on-demand: subscribe to %s: %w", subject, err)
	}
	defer sub.Unsubscribe()
	n.Logf("on-demand: serving PyTorch processes started with KINETO_USE_DAEMON=1 (uid %d%s); triggers on %s; traces to %s",
		os.Getuid(), allowed(s.cfg.AllowUIDs), subject, dir)
	err = d.Serve(ctx)
	cancel()
	return err
}

func ctxDone() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func allowed(uids []int) string {
	if len(uids) == 0 {
		return " only"
	}
	return fmt.Sprintf(" and %v", uids)
}

// prepareDir makes the traces folder, or checks the one there: a folder
// (not a link) of this user's, so that nobody else chose where the
// traces go. Other users' processes (allow_uids) must write into it:
// then it is sticky and writable by all, as /tmp.
func prepareDir(dir string, shared bool) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := ondemand.CheckOutputDir(dir); err != nil {
		return "", err
	}
	mode := os.FileMode(0o755)
	if shared {
		mode = 0o777 | os.ModeSticky
	}
	if err := os.MkdirAll(dir, mode); err != nil {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a folder", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return "", fmt.Errorf("%s belongs to uid %d, not to this agent's user (%d): give agent.on_demand.dir a folder of its own", dir, st.Uid, os.Getuid())
	}
	if shared && (fi.Mode().Perm() != 0o777 || fi.Mode()&os.ModeSticky == 0) {
		if err := os.Chmod(dir, mode); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// answer carries out one trigger message and replies; it returns the
// capture to collect, nil when there is none. A message for another run
// (two runs may share a subject token) gets no reply, nor, with Run
// empty, a run this node has no process of: the run's own agents answer.
func (s *Source) answer(d *ondemand.Daemon, n agent.Node, dir string, msg *nats.Msg) *ondemand.Capture {
	reply := func(r ondemand.TriggerReply) {
		if msg.Reply == "" {
			return
		}
		b, _ := json.Marshal(r)
		if err := msg.Respond(b); err != nil {
			n.Logf("on-demand: reply to a trigger: %v", err)
		}
	}
	m, err := ondemand.DecodeTrigger(msg.Data, d.Limits())
	if err != nil {
		n.Logf("on-demand: refused a trigger on %s: %v", msg.Subject, err)
		reply(ondemand.TriggerReply{Host: n.Host, Error: err.Error()})
		return nil
	}
	if s.Run != "" && m.Run != s.Run {
		return nil
	}
	if s.Run == "" && !hasRun(d, m.Run) {
		return nil
	}
	c, err := d.Trigger(m.Request(dir))
	if err != nil {
		n.Logf("on-demand: trigger %s of run %s by %s refused: %v", m.ID, m.Run, m.By, err)
	}
	reply(ondemand.ReplyFor(n.Host, m.Run, c, err))
	return c
}

func hasRun(d *ondemand.Daemon, run string) bool {
	for _, p := range d.Processes() {
		if p.Run == run {
			return true
		}
	}
	return false
}

// target is one process's trace being waited for.
type target struct {
	ondemand.Target
	path     string    // where it was found
	size     int64     // as last seen
	mod      time.Time // as last seen
	still    time.Time // since when it has not changed
	done     bool
	why      string // given up: why
	lastFail string
}

// collect waits for the capture's traces, publishes each once it has
// settled, gives up on the others at the capture's deadline, then
// finishes the capture and logs one line.
func (s *Source) collect(ctx context.Context, d *ondemand.Daemon, n agent.Node, c *ondemand.Capture) {
	procRoot := s.ProcRoot
	if procRoot == "" {
		procRoot = "/proc"
	}
	ts := make([]*target, len(c.Targets))
	for i, t := range c.Targets {
		ts[i] = &target{Target: t}
	}
	res := Result{Capture: c}
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	for {
		left := 0
		for _, t := range ts {
			if !t.done {
				s.step(ctx, n, c, t, procRoot)
			}
			if !t.done {
				left++
			}
		}
		if left == 0 {
			break
		}
		if s.now().After(c.Deadline) {
			for _, t := range ts {
				if !t.done {
					t.done, t.why = true, "no complete trace by "+c.Deadline.Format(time.RFC3339)+orLast(t.lastFail)
				}
			}
			break
		}
		select {
		case <-ctx.Done():
			for _, t := range ts {
				if !t.done {
					t.done, t.why = true, "the agent stopped"
				}
			}
		case <-tick.C:
			continue
		}
		break
	}
	var pub, failed []string
	for _, t := range ts {
		who := fmt.Sprintf("rank %s (pid %d)", rankText(t.Rank), t.PID)
		if t.why == "" {
			res.Published = append(res.Published, t.path)
			pub = append(pub, who)
		} else {
			res.Failed = append(res.Failed, who+": "+t.why)
			failed = append(failed, who+": "+t.why)
		}
	}
	d.Finish(c.Run, c.ID)
	line := fmt.Sprintf("on-demand: capture %s of run %s: published %d of %d trace(s)", c.ID, c.Run, len(pub), len(ts))
	if len(pub) > 0 {
		line += " [" + strings.Join(pub, ", ") + "]"
	}
	if len(failed) > 0 {
		line += "; none from " + strings.Join(failed, "; ")
	}
	n.Logf("%s", line)
	if s.OnCapture != nil {
		s.OnCapture(res)
	}
}

func orLast(fail string) string {
	if fail == "" {
		return ""
	}
	return " (last: " + fail + ")"
}

func rankText(r int) string {
	if r < 0 {
		return "?"
	}
	return strconv.Itoa(r)
}

// step looks at one target's trace once: found, settled, then published
// (a trace still being written, or cut short, is looked at again).
func (s *Source) step(ctx context.Context, n agent.Node, c *ondemand.Capture, t *target, procRoot string) {
	p, ok := t.Find(procRoot, os.Stat)
	if !ok {
		return
	}
	fi, err := os.Stat(p)
	if err != nil {
		return
	}
	if fi.Size() > c.MaxTraceBytes {
		t.done, t.why = true, fmt.Sprintf("%s is %d bytes, over the %d-byte limit (agent.on_demand.max_trace_mb)", p, fi.Size(), c.MaxTraceBytes)
		return
	}
	now := s.now()
	if p != t.path || fi.Size() != t.size || !fi.ModTime().Equal(t.mod) || t.still.IsZero() {
		t.path, t.size, t.mod, t.still = p, fi.Size(), fi.ModTime(), now
	}
	if now.Sub(t.still) < s.settle || fi.Size() == 0 {
		return
	}
	err = n.PublishCapture(ctx, c.Run, p, t.Rank)
	if err == nil {
		t.done = true
		s.removePublished(n, c, p)
		return
	}
	t.still = time.Time{} // settle again before the next try
	if !errors.Is(err, watch.ErrIncomplete) && t.lastFail == "" {
		n.Logf("on-demand: capture %s: publishing %s: %v; trying again", c.ID, p, err)
	}
	t.lastFail = err.Error()
}

// removePublished removes a published (and acknowledged) trace from the
// agent's own traces folder unless agent.on_demand.keep_traces: repeated
// captures would fill /tmp. A trace anywhere else is not the agent's to
// remove.
func (s *Source) removePublished(n agent.Node, c *ondemand.Capture, p string) {
	if s.cfg.KeepTraces || s.dir == "" || filepath.Clean(filepath.Dir(p)) != filepath.Clean(s.dir) {
		return
	}
	if err := os.Remove(p); err != nil {
		n.Logf("on-demand: capture %s: published %s, but removing it: %v", c.ID, p, err)
	}
}
