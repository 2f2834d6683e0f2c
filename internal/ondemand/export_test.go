package ondemand

// For the socket tests in package ondemand_test (which import fakekineto,
// which imports this package).

type (
	Harness = harness
	Clock   = clock
	Events  = events
)

var NewHarness = newHarness

func (h *harness) Daemon() *Daemon                { return h.d }
func (h *harness) Clock() *clock                  { return h.clk }
func (h *harness) Events() events                 { return h.evs }
func (h *harness) OutDir() string                 { return h.outDir }
func (h *harness) Request() Request               { return h.request() }
func (h *harness) Grep(s string) []string         { return h.log.grep(s) }
func (h *harness) SetProc(pid int, info ProcInfo) { h.host.set(pid, info) }
func (e events) Wait(t interface {
	Helper()
	Fatalf(string, ...any)
}, kind EventKind) Event {
	return e.waitT(t, kind)
}

func (h *harness) DaemonName() string { return h.d.cfg.Name }
