package ondemand

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is an injected clock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeHost answers Inspect from a table by reported pid: rank = pid-1000
// unless listed otherwise, the test's uid unless listed otherwise.
type fakeHost struct {
	mu       sync.Mutex
	uid      int
	traceDir string
	infos    map[int]ProcInfo
}

func (h *fakeHost) set(pid int, info ProcInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.infos == nil {
		h.infos = map[int]ProcInfo{}
	}
	h.infos[pid] = info
}

func (h *fakeHost) inspect(p Peer) (ProcInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if info, ok := h.infos[p.PID]; ok {
		return info, nil
	}
	if p.PID >= 900000 {
		return ProcInfo{}, fmt.Errorf("no such process %d", p.PID)
	}
	return ProcInfo{UID: h.uid, Rank: p.PID - 1000, LocalRank: (p.PID - 1000) % 8, WorldSize: 64, TraceDir: h.traceDir}, nil
}

// logs collects log lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logs) grep(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// events collects a daemon's events on a channel the test waits on.
type events chan Event

func (e events) on(ev Event) {
	select {
	case e <- ev:
	default:
		panic("test event buffer full")
	}
}

// wait returns the next event of kind, failing the test after a generous
// guard (the event comes from the daemon's goroutine, not a timer).
func (e events) wait(t *testing.T, kind EventKind) Event {
	t.Helper()
	return e.waitT(t, kind)
}

func (e events) waitT(t interface {
	Helper()
	Fatalf(string, ...any)
}, kind EventKind) Event {
	t.Helper()
	guard := time.After(60 * time.Second)
	for {
		select {
		case ev := <-e:
			if ev.Kind == kind {
				return ev
			}
		case <-guard:
			t.Fatalf("no %s event", kind)
		}
	}
}

type harness struct {
	d      *Daemon
	clk    *clock
	host   *fakeHost
	log    *logs
	evs    events
	outDir string
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	h := &harness{clk: newClock(), host: &fakeHost{uid: selfUID()}, log: &logs{}, evs: make(events, 1<<14), outDir: t.TempDir()}
	cfg := Config{
		Name: fmt.Sprintf("trainscope-test-%d-%s", time.Now().UnixNano(), strings.ReplaceAll(t.Name(), "/", "_")),
		Host: "node-a", DefaultRun: "run1", Now: h.clk.Now, Inspect: h.host.inspect, Logf: h.log.logf, OnEvent: h.evs.on,
	}
	if mod != nil {
		mod(&cfg)
	}
	h.host.traceDir = h.outDir
	h.d = New(cfg)
	return h
}

// request is a 3-step capture of run1 into the harness's folder, which
// the fake processes allow (KINETO_ONDEMAND_TRACE_DIR).
func (h *harness) request() Request {
	return Request{Run: "run1", Steps: 3, Wait: 10, OutputDir: h.outDir, By: "test"}
}
