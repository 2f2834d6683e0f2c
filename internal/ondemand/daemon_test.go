package ondemand

import (
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func mustEncode(t *testing.T, typ string, payload []byte) []byte {
	t.Helper()
	b, err := Encode(typ, payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pollDatagram(t *testing.T, pids ...int32) []byte {
	return mustEncode(t, TypeRequest, EncodePoll(Poll{ConfigType: ConfigActivities, PIDs: pids}))
}

func registerDatagram(t *testing.T, pid, gpu int32) []byte {
	return mustEncode(t, TypeContext, EncodeContext(Context{GPU: gpu, PID: pid}))
}

// poll is what the daemon answers process pid's poll with.
func (h *harness) poll(t *testing.T, pid int32) string {
	t.Helper()
	m, err := DecodeReply(h.d.Handle(pollDatagram(t, pid, 1), Peer{}))
	if err != nil || m.Type != TypeRequest {
		t.Fatalf("poll reply %+v: %v", m, err)
	}
	return string(m.Payload)
}

func TestRegisterCountsPerJobAndGPU(t *testing.T) {
	h := newHarness(t, nil)
	for i, want := range []int32{1, 2, 1} {
		gpu := int32(0)
		if i == 2 {
			gpu = 1
		}
		m, err := DecodeReply(h.d.Handle(registerDatagram(t, int32(1000+i), gpu), Peer{}))
		if err != nil || m.Type != TypeContext || len(m.Payload) != 4 || int32(binary.LittleEndian.Uint32(m.Payload)) != want {
			t.Fatalf("registration %d: %+v %v, want count %d", i, m, err, want)
		}
	}
	if ps := h.d.Processes(); len(ps) != 3 || ps[0].Rank != 0 || ps[2].GPU != 1 || ps[0].Run != "run1" {
		t.Fatalf("processes %+v", ps)
	}
}

func TestTriggerDeliversOnceAndNamesTraces(t *testing.T) {
	h := newHarness(t, nil)
	h.poll(t, 1003)
	h.poll(t, 1001)
	if got := h.poll(t, 1001); got != "" {
		t.Fatalf("config before any trigger: %q", got)
	}
	c, err := h.d.Trigger(h.request())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Targets) != 2 || c.Targets[0].Rank != 1 || c.Targets[1].Rank != 3 {
		t.Fatalf("targets %+v", c.Targets)
	}
	want := h.outDir + "/rank1_node-a_" + c.ID + "_1001.pt.trace.json"
	if p := c.Targets[0].Paths; len(p) != 1 || p[0] != want {
		t.Fatalf("paths %v, want [%s]", p, want)
	}
	got := h.poll(t, 1001)
	if got != c.Targets[0].Config {
		t.Fatalf("delivered %q, want %q", got, c.Targets[0].Config)
	}
	kv, err := ParseKinetoConfig(got)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"ACTIVITIES_LOG_FILE": h.outDir + "/rank1_node-a_" + c.ID + ".pt.trace.json", "ACTIVITIES_ITERATIONS": "3",
		"PROFILE_START_ITERATION": "0", "PROFILE_START_ITERATION_ROUNDUP": "10", "PROFILE_WITH_STACK": "false",
		"ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB": "256", "REQUEST_TRACE_ID": c.ID,
	} {
		if kv[k] != v {
			t.Errorf("%s=%q, want %q", k, kv[k], v)
		}
	}
	if TracePath(kv["ACTIVITIES_LOG_FILE"], 1001) != want {
		t.Errorf("TracePath disagrees with the capture's path")
	}
	ev := h.evs.wait(t, EventDelivered)
	if ev.Target.PID != 1001 || ev.Target.Paths[0] != want {
		t.Fatalf("delivered event %+v", ev.Target)
	}
	if again := h.poll(t, 1001); again != "" {
		t.Fatalf("config handed twice: %q", again)
	}
	// a poll without the activities bit (profiler busy) does not take it
	if m, _ := DecodeReply(h.d.Handle(mustEncode(t, TypeRequest, EncodePoll(Poll{ConfigType: ConfigEvents, PIDs: []int32{1003}})), Peer{})); len(m.Payload) != 0 {
		t.Fatalf("config handed to a poll that did not ask for activities")
	}
	if h.poll(t, 1003) != c.Targets[1].Config {
		t.Fatal("rank 3 lost its config")
	}
	lines := h.log.grep("capture " + c.ID + " of run run1 asked by test")
	if len(lines) != 1 {
		t.Fatalf("log lines %q", h.log.lines)
	}
	for _, s := range []string{"2 process(es)", "pid 1001 rank 1", "pid 1003 rank 3", "3 step(s) from the next step that is a multiple of 10", h.outDir, "no shapes, stacks or memory"} {
		if !strings.Contains(lines[0], s) {
			t.Errorf("log line %q lacks %q", lines[0], s)
		}
	}
}

func TestOneCapturePerRun(t *testing.T) {
	h := newHarness(t, nil)
	h.poll(t, 1000)
	c, err := h.d.Trigger(h.request())
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.d.Trigger(h.request())
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), c.ID) || !strings.Contains(err.Error(), "asked by test") {
		t.Fatalf("second trigger: %v", err)
	}
	if err := h.d.Finish("run1", "other"); err == nil {
		t.Fatal("finished a capture that is not in flight")
	}
	if err := h.d.Finish("run1", c.ID); err != nil {
		t.Fatal(err)
	}
	if got := h.poll(t, 1000); got != "" {
		t.Fatalf("a finished capture's config was still handed: %q", got)
	}
	c2, err := h.d.Trigger(h.request())
	if err != nil {
		t.Fatal(err)
	}
	// past the deadline the run is free again, and the untaken config is withdrawn
	h.clk.Advance(h.d.Limits().CaptureTimeout + time.Second)
	h.poll(t, 1000) // keep the process alive... which prunes the capture first
	if _, ok := h.d.Active("run1"); ok {
		t.Fatal("capture still active past its deadline")
	}
	if len(h.log.grep("capture "+c2.ID+" of run run1 timed out: 0 of 1")) != 1 {
		t.Fatalf("no timeout line: %q", h.log.lines)
	}
	if _, err := h.d.Trigger(h.request()); err != nil {
		t.Fatal(err)
	}
	// another run is not blocked by this one
	h.host.set(2000, ProcInfo{UID: selfUID(), Rank: 0, Run: "run2", TraceDir: h.outDir})
	h.poll(t, 2000)
	r := h.request()
	r.Run = "run2"
	if _, err := h.d.Trigger(r); err != nil {
		t.Fatal(err)
	}
}

func TestRefusals(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.MaxSteps = 20 })
	other := selfUID() + 4242
	h.host.set(1500, ProcInfo{UID: other, Rank: 0})
	if m, _ := DecodeReply(h.d.Handle(registerDatagram(t, 1500, 0), Peer{})); int32(binary.LittleEndian.Uint32(m.Payload)) != -1 {
		t.Fatalf("another user's registration answered %v, want -1", m.Payload)
	}
	if got := h.poll(t, 1500); got != "" {
		t.Fatalf("another user's process got %q", got)
	}
	ev := h.evs.wait(t, EventRefused)
	if !errors.Is(ev.Err, errNotAllowed) || ev.Process.PID != 1500 {
		t.Fatalf("refused event %+v", ev)
	}
	if n := len(h.log.grep("refused process 1500")); n != 1 {
		t.Fatalf("refusal logged %d times, want once", n)
	}
	if _, err := h.d.Trigger(h.request()); !errors.Is(err, ErrNoProcesses) {
		t.Fatalf("trigger with only a refused process: %v", err)
	}
	// the kernel's word: a sender of another uid is refused whatever its pid's owner
	if got := h.d.Handle(pollDatagram(t, 1001), Peer{Cred: true, HostPID: 77, UID: other}); len(got) != headerSize {
		t.Fatalf("reply to a refused sender: %d bytes", len(got))
	}
	// ...unless allowed
	h2 := newHarness(t, func(c *Config) { c.AllowUIDs = []int{other} })
	h2.host.set(1500, ProcInfo{UID: other, Rank: 5, TraceDir: h2.outDir})
	h2.d.Handle(pollDatagram(t, 1500), Peer{Cred: true, HostPID: 77, UID: other})
	if ps := h2.d.Processes(); len(ps) != 1 || ps[0].HostPID != 77 || ps[0].Rank != 5 {
		t.Fatalf("allowed user's process: %+v", ps)
	}
	// a process that cannot be inspected
	h.poll(t, 900001)
	if len(h.log.grep("refused process 900001")) != 1 {
		t.Fatalf("uninspectable process not refused: %q", h.log.lines)
	}

	h.poll(t, 1000)
	for name, mod := range map[string]func(*Request){
		"too many steps":    func(r *Request) { r.Steps = 21 },
		"too long":          func(r *Request) { r.Steps, r.Duration = 0, 2*time.Minute },
		"steps and time":    func(r *Request) { r.Duration = time.Second },
		"neither":           func(r *Request) { r.Steps = 0 },
		"wait too long":     func(r *Request) { r.Wait = 5000 },
		"negative":          func(r *Request) { r.Wait = -1 },
		"no run":            func(r *Request) { r.Run = "" },
		"relative dir":      func(r *Request) { r.OutputDir = "traces" },
		"dir with =":        func(r *Request) { r.OutputDir = "/tmp/a=b" },
		"dir with #":        func(r *Request) { r.OutputDir = "/tmp/a#b" },
		"dir with newline":  func(r *Request) { r.OutputDir = "/tmp/a\nACTIVITIES_ITERATIONS=100000" },
		"dir with ..":       func(r *Request) { r.OutputDir = "/tmp/../etc" },
		"dir with .json":    func(r *Request) { r.OutputDir = "/tmp/x.json" },
		"bad id":            func(r *Request) { r.ID = "a/b" },
		"start with steps":  func(r *Request) { r.StartAt = h.clk.Now().Add(time.Minute) },
		"start in the past": func(r *Request) { r.Steps, r.Duration, r.StartAt = 0, time.Second, h.clk.Now().Add(-time.Second) },
		"start far ahead":   func(r *Request) { r.Steps, r.Duration, r.StartAt = 0, time.Second, h.clk.Now().Add(time.Hour) },
	} {
		r := h.request()
		mod(&r)
		if _, err := h.d.Trigger(r); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, ok := h.d.Active("run1"); ok {
		t.Fatal("a refused request left a capture in flight")
	}
}

func TestDurationCaptureAndFallbackPath(t *testing.T) {
	h := newHarness(t, nil)
	h.host.set(1000, ProcInfo{UID: selfUID(), Rank: 0}) // no KINETO_ONDEMAND_TRACE_DIR
	h.poll(t, 1000)
	r := h.request()
	r.OutputDir = "/var/lib/trainscope/traces/run1"
	r.Steps, r.Wait, r.Duration, r.StartAt = 0, 0, 2*time.Second, h.clk.Now().Add(20*time.Second)
	r.Toggles = Toggles{Shapes: true, Stacks: true, Memory: true}
	c, err := h.d.Trigger(r)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Targets[0].Paths
	if len(p) != 2 || p[0] != "/tmp/libkineto_activities_1000.json" || p[1] != "/var/lib/trainscope/traces/run1/rank0_node-a_"+c.ID+"_1000.pt.trace.json" {
		t.Fatalf("paths %v", p)
	}
	kv, _ := ParseKinetoConfig(h.poll(t, 1000))
	if kv["ACTIVITIES_DURATION_MSECS"] != "2000" || kv["PROFILE_START_TIME"] != strconv.FormatInt(r.StartAt.UnixMilli(), 10) || kv["ACTIVITIES_ITERATIONS"] != "" ||
		kv["PROFILE_REPORT_INPUT_SHAPES"] != "true" || kv["PROFILE_WITH_STACK"] != "true" || kv["PROFILE_PROFILE_MEMORY"] != "true" {
		t.Fatalf("duration config %v", kv)
	}
	line := h.log.grep("capture " + c.ID)[0]
	if !strings.Contains(line, "with shapes, stacks, memory") || !strings.Contains(line, "2s from 2026-11-27T12:00:20Z") || !strings.Contains(line, "may write to /tmp/libkineto_activities_<pid>.json") {
		t.Fatalf("log line %q", line)
	}
}

func TestRunsPidsAndKeepAlive(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DefaultRun = "" })
	h.host.set(1000, ProcInfo{UID: selfUID(), Rank: 0, Run: "mine", JobID: "elastic-1"})
	h.host.set(1001, ProcInfo{UID: selfUID(), Rank: 1, JobID: "elastic-1"})
	h.host.set(1002, ProcInfo{UID: selfUID(), Rank: 2})
	h.poll(t, 1000)
	h.poll(t, 1001)
	h.d.Handle(mustEncode(t, TypeRequest, EncodePoll(Poll{ConfigType: ConfigActivities, JobID: 99, PIDs: []int32{1002, 500, 1}})), Peer{})
	runs := map[int]string{}
	for _, p := range h.d.Processes() {
		runs[p.PID] = p.Run
	}
	if runs[1000] != "mine" || runs[1001] != "elastic-1" || runs[1002] != "99" {
		t.Fatalf("runs %v", runs)
	}
	r := h.request()
	r.Run, r.PIDs = "99", []int{500} // an ancestor's pid, as dyno --pids matches
	if c, err := h.d.Trigger(r); err != nil || len(c.Targets) != 1 || c.Targets[0].PID != 1002 {
		t.Fatalf("trigger by ancestor pid: %+v %v", c, err)
	}
	r.Run, r.PIDs = "elastic-1", []int{4}
	if _, err := h.d.Trigger(r); !errors.Is(err, ErrNoProcesses) || !strings.Contains(err.Error(), `run "elastic-1": 1`) {
		t.Fatalf("trigger of absent pid: %v", err)
	}
	h.clk.Advance(61 * time.Second)
	h.poll(t, 1000)
	if ps := h.d.Processes(); len(ps) != 1 || ps[0].PID != 1000 {
		t.Fatalf("after keep-alive: %+v", ps)
	}
	if ev := h.evs.wait(t, EventForgotten); ev.Process == nil {
		t.Fatal("forgotten event without its process")
	}
}

func TestMalformedDatagramsAreDropped(t *testing.T) {
	h := newHarness(t, nil)
	good := pollDatagram(t, 1000)
	long := make([]byte, MaxDatagram+1)
	for name, b := range map[string][]byte{
		"empty":            nil,
		"short":            good[:20],
		"too long":         long,
		"size mismatch":    append(append([]byte{}, good...), 0, 0, 0, 0),
		"truncated":        good[:len(good)-1],
		"unknown type":     mustEncode(t, "dcgm", []byte{1}),
		"ctxt wrong size":  mustEncode(t, TypeContext, make([]byte, 12)),
		"ctxt pid 0":       mustEncode(t, TypeContext, make([]byte, 16)),
		"req no pids":      mustEncode(t, TypeRequest, EncodePoll(Poll{ConfigType: 2})),
		"req too many":     mustEncode(t, TypeRequest, EncodePoll(Poll{ConfigType: 2, PIDs: make([]int32, MaxPIDs+1)})),
		"req negative pid": mustEncode(t, TypeRequest, EncodePoll(Poll{ConfigType: 2, PIDs: []int32{-5}})),
		"req n lies": func() []byte {
			b := pollDatagram(t, 1000, 1)
			b[headerSize+4] = 3
			return b
		}(),
		"type not NUL-terminated": func() []byte {
			b := append([]byte{}, good...)
			for i := 8; i < headerSize; i++ {
				b[i] = 'x'
			}
			return b
		}(),
		"type not printable": func() []byte {
			b := append([]byte{}, good...)
			b[9] = 0x01
			return b
		}(),
	} {
		if reply := h.d.Handle(b, Peer{}); reply != nil {
			t.Errorf("%s: answered %q", name, reply)
		}
	}
	st := h.d.Stats()
	if st.Malformed != 13 || st.Unknown != 1 || st.Polls != 0 || len(h.d.Processes()) != 0 {
		t.Fatalf("stats %+v", st)
	}
	if len(h.log.grep("malformed datagram")) != 1 {
		t.Fatalf("malformed datagrams logged %d times, want once", len(h.log.grep("malformed datagram")))
	}
	if h.poll(t, 1000) != "" || len(h.d.Processes()) != 1 {
		t.Fatal("daemon does not serve after malformed datagrams")
	}
}

// TestPidReuse: a pid that comes back with other ancestors, or from
// another sender uid, is another process and is inspected afresh.
func TestPidReuse(t *testing.T) {
	h := newHarness(t, nil)
	h.d.Handle(pollDatagram(t, 1000, 10, 1), Peer{})
	h.host.set(1000, ProcInfo{UID: selfUID(), Rank: 7, TraceDir: h.outDir})
	h.d.Handle(pollDatagram(t, 1000, 10, 1), Peer{})
	if ps := h.d.Processes(); len(ps) != 1 || ps[0].Rank != 0 {
		t.Fatalf("same process re-inspected: %+v", ps)
	}
	h.d.Handle(pollDatagram(t, 1000, 20, 1), Peer{})
	if ps := h.d.Processes(); len(ps) != 1 || ps[0].Rank != 7 || ps[0].Ancestors[0] != 20 {
		t.Fatalf("a reused pid kept the old process: %+v", ps)
	}
	h.d.Handle(pollDatagram(t, 1001), Peer{Cred: true, HostPID: 5001, UID: selfUID()})
	h.d.Handle(pollDatagram(t, 1001), Peer{Cred: true, HostPID: 5001, UID: selfUID() + 1})
	for _, p := range h.d.Processes() {
		if p.PID == 1001 {
			t.Fatalf("pid reused by another user kept: %+v", p)
		}
	}
}

func TestAnswerAndFind(t *testing.T) {
	h := newHarness(t, nil)
	h.poll(t, 1002)
	m := NewTrigger("run1", 2, 0, "cli bob", h.clk.Now())
	rep := h.d.Answer(m, h.outDir)
	if rep.Error != "" || rep.Capture != m.ID || rep.Host != "node-a" || len(rep.Ranks) != 1 || rep.Ranks[0] != 2 {
		t.Fatalf("reply %+v", rep)
	}
	if cs := h.d.Captures(); len(cs) != 1 || cs[0].ID != m.ID || cs[0].Targets[0].Paths[0] != rep.Paths[0] {
		t.Fatalf("captures %+v", cs)
	}
	if rep := h.d.Answer(m, h.outDir); !strings.Contains(rep.Error, "in flight") || rep.Capture != "" {
		t.Fatalf("second answer %+v", rep)
	}
	tg := Target{HostPID: 4321, Paths: []string{"/tmp/libkineto_activities_7.json", "/w/a_7.pt.trace.json"}}
	have := map[string]bool{}
	stat := func(p string) (os.FileInfo, error) {
		if have[p] {
			return nil, nil
		}
		return nil, os.ErrNotExist
	}
	if _, ok := tg.Find("/proc", stat); ok {
		t.Fatal("found a trace that is not there")
	}
	have["/proc/4321/root/w/a_7.pt.trace.json"] = true
	if p, ok := tg.Find("/proc", stat); !ok || p != "/proc/4321/root/w/a_7.pt.trace.json" {
		t.Fatalf("in the container: %s %v", p, ok)
	}
	have["/w/a_7.pt.trace.json"] = true
	if p, _ := tg.Find("/proc", stat); p != "/w/a_7.pt.trace.json" {
		t.Fatalf("on the host: %s", p)
	}
}
