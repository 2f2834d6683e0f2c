//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trainscope/trainscope/internal/agent"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/ondemand"
	"github.com/trainscope/trainscope/internal/ondemand/fakekineto"
	"github.com/trainscope/trainscope/internal/ondemand/odwire"
	"github.com/trainscope/trainscope/internal/server"
)

// fakeProc is a /proc with one process, this test's own (the kernel
// names it by its real pid), owned by the test's user and started with
// env: what a training process started by torchrun shows the agent.
func fakeProc(t *testing.T, env ...string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, fmt.Sprint(os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	uid := os.Getuid()
	status := fmt.Sprintf("Name:\tpython\nUid:\t%d\t%d\t%d\t%d\n", uid, uid, uid, uid)
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "environ"), []byte(strings.Join(env, "\x00")+"\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// onDemandAgent starts agent o (no counters, no step filter) with the
// on-demand source src and waits until src serves; stop ends the agent
// and fails the test on its error.
func onDemandAgent(ctx context.Context, t *testing.T, o agent.Options, src *odwire.Source) (log *syncBuffer, stop func()) {
	t.Helper()
	log = &syncBuffer{}
	o.Wait, o.Sources, o.Log = -1, []agent.Source{src}, log
	o.Counters = agent.CounterOptions{From: "off", Period: time.Second, Flush: time.Second}
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- agent.Run(actx, o) }()
	waitFor(t, "the agent's on-demand source", func() bool { return strings.Contains(log.String(), "on-demand: serving") })
	return log, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}
}

// kinetoProcess is a fake libkineto process pid on daemon name, announced
// as libkineto does: by a first poll, which has no config yet.
func kinetoProcess(t *testing.T, name string, pid int32) *fakekineto.Client {
	t.Helper()
	client, err := fakekineto.Dial(name, "", pid, []int32{pid - 1, 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := client.Poll(); err != nil || cfg != "" {
		client.Close()
		t.Fatalf("first poll: %q, %v", cfg, err)
	}
	return client
}

// triggerCmd runs 'trainscope trigger' against the NATS at url: its exit
// code and its output.
func triggerCmd(ctx context.Context, url string, args ...string) (int, string) {
	var out, errOut bytes.Buffer
	code := run(ctx, append([]string{"trigger", "--nats-url", url}, args...), &out, &errOut)
	return code, out.String() + errOut.String()
}

// On demand, end to end: an agent with the on-demand source, a fake
// libkineto process of rank 3 (RANK=3 in its environment, no
// distributedInfo in its trace), 'trainscope trigger' over NATS; the
// process takes the config on its next poll and writes its trace, the
// agent publishes it, and serve stores it under rank 3. A second trigger
// while the first is in flight is refused (exit 1), one for a run no
// agent serves finds no agent (exit 1), as does one whose agents do not
// answer, and a trigger without --run is a usage error (exit 2).
func TestOnDemandEndToEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := agentServer(ctx, t)
	defer srv.Shutdown()

	traces := t.TempDir()
	proc := fakeProc(t, "RANK=3", "LOCAL_RANK=3", "WORLD_SIZE=4", "KINETO_USE_DAEMON=1", "KINETO_ONDEMAND_TRACE_DIR="+traces)
	captured := make(chan odwire.Result, 4)
	name := fmt.Sprintf("trainscope-e2e-%d", time.Now().UnixNano())
	src := &odwire.Source{Run: "od-run", Enable: true, Dir: traces, Name: name, Inspect: ondemand.ProcFS(proc),
		OnCapture: func(r odwire.Result) { captured <- r }}
	log, stopAgent := onDemandAgent(ctx, t, agent.Options{
		Conn: agent.ConnOptions{URL: srv.NATSURL(), Run: "od-run", Host: "node-9"}, Dir: t.TempDir()}, src)
	defer stopAgent()
	client := kinetoProcess(t, name, 4242)
	defer client.Close()

	trigger := func(args ...string) (int, string) {
		return triggerCmd(ctx, srv.NATSURL(), args...)
	}
	if code, msg := trigger("--steps", "3"); code != 2 || !strings.Contains(msg, "--run ID is required") {
		t.Errorf("trigger without --run: exit %d: %s", code, msg)
	}
	code, msg := trigger("--run", "od-run", "--steps", "3", "--wait", "10", "--agents", "1", "--timeout", "1m")
	if code != 0 || !strings.Contains(msg, "node-9: accepted: 1 process(es): pid 4242 rank 3") || !strings.Contains(msg, "1 of 1 agent(s) accepted") {
		t.Fatalf("trigger: exit %d:\n%s", code, msg)
	}
	// one capture of a run at a time
	code, msg = trigger("--run", "od-run", "--agents", "1", "--timeout", "1m")
	if code != 1 || !strings.Contains(msg, "node-9: refused:") || !strings.Contains(msg, "in flight") || !strings.Contains(msg, "none of the 1 agent(s)") {
		t.Errorf("a second trigger in flight: exit %d:\n%s", code, msg)
	}
	if code, msg := trigger("--run", "nobody-runs-this", "--timeout", "1m"); code != 1 || !strings.Contains(msg, "no agent listens") {
		t.Errorf("a run without agents: exit %d:\n%s", code, msg)
	}
	// a subscriber that never answers: the answers are gathered until the
	// timeout, and none came
	nc, err := nats.Connect(srv.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.SubscribeSync(ondemand.TriggerSubject("default", "silent-run")); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	if code, msg := trigger("--run", "silent-run", "--timeout", "100ms"); code != 1 || !strings.Contains(msg, "no agent of run silent-run answered within 100ms") {
		t.Errorf("a silent agent: exit %d:\n%s", code, msg)
	}

	// the process takes its config on its next poll and traces
	var cfg string
	waitFor(t, "the config", func() bool {
		cfg, err = client.Poll()
		return err != nil || cfg != ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg, "ACTIVITIES_ITERATIONS=3") || !strings.Contains(cfg, "PROFILE_START_ITERATION_ROUNDUP=10") {
		t.Fatalf("config:\n%s", cfg)
	}
	path, err := client.Trace(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var res odwire.Result
	select {
	case res = <-captured:
	case <-time.After(time.Minute):
		t.Fatalf("no capture published in a minute; agent log:\n%s", log.String())
	}
	if len(res.Published) != 1 || res.Published[0] != path || len(res.Failed) != 0 {
		t.Fatalf("capture: %+v, want %s published", res, path)
	}
	if !strings.Contains(log.String(), "on-demand: capture "+res.Capture.ID+" of run od-run: published 1 of 1 trace(s) [rank 3 (pid 4242)]") {
		t.Errorf("no log line for the capture:\n%s", log.String())
	}
	waitFor(t, "the trace stored", func() bool {
		return storeCount(t, srv, "SELECT count(*) FROM slices WHERE run_id = 'od-run'") > 0
	})
	if n := storeCount(t, srv, "SELECT count(*) FROM slices WHERE run_id = 'od-run' AND rank IS DISTINCT FROM 3"); n != 0 {
		t.Errorf("%d slices of the capture stored under another rank than 3", n)
	}
	if n := storeCount(t, srv, "SELECT count(DISTINCT step) FROM steps WHERE run_id = 'od-run' AND rank = 3 AND step BETWEEN 10 AND 12"); n != 3 {
		t.Errorf("%d of steps 10-12 stored for rank 3, want 3", n)
	}
	// the run is free again
	if code, msg := trigger("--run", "od-run", "--agents", "1", "--timeout", "1m"); code != 0 {
		t.Errorf("a trigger after the capture: exit %d:\n%s", code, msg)
	}
}

// With --runs-in the agent has no run of its own: it answers the triggers
// of the runs its processes name (TRAINSCOPE_RUN in their environment)
// and publishes each capture under that run; a run none of its processes
// names finds no agent.
func TestOnDemandRunsIn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := agentServer(ctx, t)
	defer srv.Shutdown()

	traces := t.TempDir()
	proc := fakeProc(t, "RANK=1", "TRAINSCOPE_RUN=od-multi", "KINETO_USE_DAEMON=1", "KINETO_ONDEMAND_TRACE_DIR="+traces)
	captured := make(chan odwire.Result, 2)
	name := fmt.Sprintf("trainscope-runsin-%d", time.Now().UnixNano())
	src := &odwire.Source{Enable: true, Dir: traces, Name: name, Inspect: ondemand.ProcFS(proc),
		OnCapture: func(r odwire.Result) { captured <- r }}
	log, stopAgent := onDemandAgent(ctx, t, agent.Options{
		Conn: agent.ConnOptions{URL: srv.NATSURL(), Host: "node-4"}, RunsIn: t.TempDir()}, src)
	defer stopAgent()
	client := kinetoProcess(t, name, 4343)
	defer client.Close()
	trigger := func(args ...string) (int, string) {
		return triggerCmd(ctx, srv.NATSURL(), append([]string{"--timeout", "1m"}, args...)...)
	}
	if code, msg := trigger("--run", "od-other", "--agents", "1", "--timeout", "2s"); code != 1 {
		t.Errorf("a run no process names: exit %d:\n%s", code, msg)
	}
	if code, msg := trigger("--run", "od-multi", "--steps", "2", "--agents", "1"); code != 0 || !strings.Contains(msg, "node-4: accepted: 1 process(es): pid 4343 rank 1") {
		t.Fatalf("trigger: exit %d:\n%s", code, msg)
	}
	var cfg string
	var err error
	waitFor(t, "the config", func() bool {
		cfg, err = client.Poll()
		return err != nil || cfg != ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Trace(cfg); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-captured:
		if len(res.Published) != 1 || res.Capture.Run != "od-multi" {
			t.Fatalf("capture: %+v", res)
		}
	case <-time.After(time.Minute):
		t.Fatalf("no capture published in a minute; agent log:\n%s", log.String())
	}
	waitFor(t, "the trace stored under od-multi", func() bool {
		return storeCount(t, srv, "SELECT count(*) FROM slices WHERE run_id = 'od-multi' AND rank = 1") > 0
	})
}

// An agent cannot stand where dynolog stands when the socket is taken: it
// says so and stops.
func TestOnDemandSocketTaken(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := agentServer(ctx, t)
	defer srv.Shutdown()
	name := fmt.Sprintf("trainscope-taken-%d", time.Now().UnixNano())
	dynolog := ondemand.New(ondemand.Config{Name: name})
	if err := dynolog.Listen(); err != nil {
		t.Fatal(err)
	}
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	go dynolog.Serve(dctx)
	err := agent.Run(ctx, agent.Options{
		Conn: agent.ConnOptions{URL: srv.NATSURL(), Run: "od-run", Host: "node-9"}, Dir: t.TempDir(), Wait: -1,
		Counters: agent.CounterOptions{From: "off", Period: time.Second, Flush: time.Second},
		Sources:  []agent.Source{&odwire.Source{Enable: true, Dir: t.TempDir(), Name: name}}, Log: &syncBuffer{}})
	if err == nil || !strings.Contains(err.Error(), "is dynolog or another agent running?") {
		t.Fatalf("agent with the socket taken: %v", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Fatal("the agent ran until cancelled")
	}
}

// serve.auto_trigger: after the live pass whose report holds a finding of
// a configured detector (gpu_time_util fires on the sample run), serve
// asks the run's agents for a capture, naming the detector; the
// scheduler's clock is the test's.
func TestServeAutoTrigger(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Setenv("TRAINSCOPE_NATS_LISTEN", "127.0.0.1:0")
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Serve.DataDir, cfg.Serve.HTTP, cfg.Serve.Flight = t.TempDir(), "127.0.0.1:0", ""
	cfg.Serve.AutoTrigger.Enabled, cfg.Serve.AutoTrigger.Detectors = true, []string{"gpu_time_util"}
	clk := newTestClock()
	srv, err := server.Start(ctx, cfg, mustSet(t), t.Logf, server.WithClock(clk.Now, clk.ticks))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	// a stand-in agent of the run
	nc, err := nats.Connect(srv.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	asked := make(chan ondemand.TriggerMessage, 4)
	if _, err := nc.Subscribe(ondemand.TriggerSubject(cfg.Stream.Cluster, "auto-run"), func(msg *nats.Msg) {
		m, err := ondemand.DecodeTrigger(msg.Data, ondemand.Limits{})
		if err != nil {
			t.Errorf("trigger %s: %v", msg.Data, err)
		}
		asked <- m
		b, _ := json.Marshal(ondemand.TriggerReply{Host: "node-1", Run: m.Run, Capture: m.ID, Processes: []int{7}, Ranks: []int{0}})
		msg.Respond(b)
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()

	var out, errOut bytes.Buffer
	if code := run(ctx, append([]string{"publish", "--run", "auto-run", "--host", "node-1", "-q", "--nats-url", srv.NATSURL()}, sampleRun...), &out, &errOut); code != 0 {
		t.Fatalf("publish exit %d: %s", code, errOut.String())
	}
	// the run goes quiet on the test's clock once its batches are stored
	waitFor(t, "a report", func() bool {
		clk.Advance(cfg.Serve.Quiet)
		clk.Tick()
		return srv.Scheduler().Report("auto-run") != nil
	})
	select {
	case m := <-asked:
		if m.Run != "auto-run" || m.Reason != "gpu_time_util" || m.By != "serve auto" || m.Steps != ondemand.DefaultTriggerSteps {
			t.Errorf("automatic trigger %+v", m)
		}
	case <-time.After(time.Minute):
		t.Fatal("no automatic trigger in a minute after the report")
	}
}
