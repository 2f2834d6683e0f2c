//go:build linux

package ondemand_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trainscope/trainscope/internal/ondemand"
	"github.com/trainscope/trainscope/internal/ondemand/fakekineto"
)

// serve puts h's daemon on its socket until the test ends.
func serve(t *testing.T, h *ondemand.Harness) {
	t.Helper()
	d := h.Daemon()
	if err := d.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

func dial(t *testing.T, h *ondemand.Harness, socketDir string, pid int32) *fakekineto.Client {
	t.Helper()
	c, err := fakekineto.Dial(daemonName(h), socketDir, pid, []int32{pid - 1, 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// daemonName is the harness's socket name (unique per test).
func daemonName(h *ondemand.Harness) string { return h.DaemonName() }

func TestEndToEnd(t *testing.T) {
	h := ondemand.NewHarness(t, nil)
	serve(t, h)
	c := dial(t, h, "", 1002)
	if n, err := c.Register(0); err != nil || n != 1 {
		t.Fatalf("register: %d %v", n, err)
	}
	if cfg, err := c.Poll(); err != nil || cfg != "" {
		t.Fatalf("poll before a trigger: %q %v", cfg, err)
	}
	capt, err := h.Daemon().Trigger(h.Request())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.Poll()
	if err != nil || cfg == "" || cfg != capt.Targets[0].Config {
		t.Fatalf("poll after the trigger: %q %v", cfg, err)
	}
	ev := h.Events().Wait(t, ondemand.EventDelivered)
	if ev.Target.Rank != 2 || ev.Capture.ID != capt.ID {
		t.Fatalf("delivered %+v", ev.Target)
	}
	path, err := c.Trace(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if path != ev.Target.Paths[0] || filepath.Dir(path) != h.OutDir() {
		t.Fatalf("trace at %s, reported %v", path, ev.Target.Paths)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceID     string `json:"trace_id"`
		TraceEvents []struct{ Name string }
	}
	if err := json.Unmarshal(b, &trace); err != nil || trace.TraceID != capt.ID || trace.TraceEvents[0].Name != "ProfilerStep#10" || len(trace.TraceEvents) != 6 {
		t.Fatalf("trace %s: %v", b, err)
	}
	if err := h.Daemon().Finish("run1", capt.ID); err != nil {
		t.Fatal(err)
	}
	if st := h.Daemon().Stats(); st.Registrations != 1 || st.Polls != 2 || st.Delivered != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSocketRefusesAndSurvivesGarbage(t *testing.T) {
	h := ondemand.NewHarness(t, nil)
	serve(t, h)
	h.SetProc(1500, ondemand.ProcInfo{UID: os.Getuid() + 1, Rank: 0})
	stranger := dial(t, h, "", 1500)
	if n, err := stranger.Register(0); err != nil || n != -1 {
		t.Fatalf("another user's registration: %d %v", n, err)
	}
	c := dial(t, h, "", 1000)
	for _, b := range [][]byte{{1, 2, 3}, make([]byte, 40), make([]byte, ondemand.MaxDatagram+100)} {
		if err := c.Send(b); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		h.Events().Wait(t, ondemand.EventMalformed)
	}
	if _, err := c.Register(3); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Poll(); err != nil {
		t.Fatal(err)
	}
	capt, err := h.Daemon().Trigger(h.Request())
	if err != nil || len(capt.Targets) != 1 || capt.Targets[0].PID != 1000 {
		t.Fatalf("trigger: %+v %v", capt, err)
	}
	if cfg, err := stranger.Poll(); err != nil || cfg != "" {
		t.Fatalf("another user's process polled %q %v", cfg, err)
	}
	if _, err := h.Daemon().Trigger(h.Request()); !errors.Is(err, ondemand.ErrBusy) {
		t.Fatalf("concurrent trigger: %v", err)
	}
	if st := h.Daemon().Stats(); st.Malformed != 3 || st.Refused < 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestManyProcesses: 64 processes (8 nodes' worth of ranks on one host)
// register and poll at once; one trigger reaches each with its own rank's
// file.
func TestManyProcesses(t *testing.T) {
	const n = 64
	h := ondemand.NewHarness(t, nil)
	serve(t, h)
	clients := make([]*fakekineto.Client, n)
	for i := range clients {
		clients[i] = dial(t, h, "", int32(1000+i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for _, c := range clients {
		wg.Go(func() {
			if _, err := c.Register(0); err != nil {
				errs <- err
			}
			if cfg, err := c.Poll(); err != nil || cfg != "" {
				errs <- errors.Join(err, errors.New("config before the trigger: "+cfg))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := len(h.Daemon().Processes()); got != n {
		t.Fatalf("%d processes registered, want %d", got, n)
	}
	capt, err := h.Daemon().Trigger(h.Request())
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, n)
	errs = make(chan error, n)
	for i, c := range clients {
		wg.Go(func() {
			cfg, err := c.Poll()
			if err == nil {
				paths[i], err = c.Trace(cfg)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range n {
		ev := h.Events().Wait(t, ondemand.EventDelivered)
		want := "/rank" + itoa(ev.Target.Rank) + "_"
		if !strings.Contains(ev.Target.Paths[0], want) || seen[ev.Target.Paths[0]] {
			t.Fatalf("target %+v", ev.Target)
		}
		seen[ev.Target.Paths[0]] = true
	}
	for i, p := range paths {
		if !seen[p] || capt.Targets[i].Paths[0] != p {
			t.Fatalf("process %d wrote %s, capture says %v", 1000+i, p, capt.Targets[i].Paths)
		}
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSocketDir: KINETO_IPC_SOCKET_DIR's variant, socket files in a
// shared folder.
func TestSocketDir(t *testing.T) {
	dir, err := os.MkdirTemp("", "ts-sock") // short: sun_path holds 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := ondemand.NewHarness(t, func(c *ondemand.Config) { c.SocketDir, c.Name = dir, "dynolog" })
	serve(t, h)
	fi, err := os.Stat(filepath.Join(dir, "dynolog"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket file: %v %v", fi, err)
	}
	c := dial(t, h, dir, 1001)
	if _, err := c.Poll(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Daemon().Trigger(h.Request()); err != nil {
		t.Fatal(err)
	}
	if cfg, err := c.Poll(); err != nil || !strings.Contains(cfg, "ACTIVITIES_ITERATIONS=3") {
		t.Fatalf("config %q %v", cfg, err)
	}
}

func TestListenRefusesATakenName(t *testing.T) {
	h := ondemand.NewHarness(t, nil)
	serve(t, h)
	other := ondemand.New(ondemand.Config{Name: h.DaemonName()})
	if err := other.Listen(); err == nil || !strings.Contains(err.Error(), "dynolog or another agent") {
		t.Fatalf("second daemon on the same name: %v", err)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
