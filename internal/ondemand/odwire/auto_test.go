package odwire

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/ondemand"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func report(run string, at time.Time, detectors ...string) Report {
	var fs []string
	for _, d := range detectors {
		fs = append(fs, fmt.Sprintf(`{"run_id": %q, "detector": %q, "rank": 2}`, run, d))
	}
	return Report{Run: run, At: at, JSON: []byte(`{"findings": [` + strings.Join(fs, ",") + `]}`)}
}

// A finding of a configured detector raises a capture of its run, once
// per report, at most once per run per interval and max across runs; the
// clock is the test's.
func TestAutoTriggerRateLimited(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	var logs []string
	cfg := config.Default().Serve.AutoTrigger
	cfg.Enabled, cfg.Detectors, cfg.Interval, cfg.Max = true, []string{"gpu_clock_cap", "gpu_throttle"}, 30*time.Minute, 2
	a := NewAuto(cfg, clk.Now, nil, func(f string, args ...any) { logs = append(logs, fmt.Sprintf(f, args...)) })
	runs := func(ms []ondemand.TriggerMessage) string {
		var out []string
		for _, m := range ms {
			if err := m.Check(ondemand.Limits{}); err != nil {
				t.Errorf("trigger %+v: %v", m, err)
			}
			out = append(out, m.Run+":"+m.Reason)
		}
		return strings.Join(out, " ")
	}
	at := clk.Now()
	got := a.Decide([]Report{
		report("a", at, "gpu_throttle", "straggler", "gpu_clock_cap"),
		report("b", at, "straggler"), // not a configured detector
		report("c", at),
	})
	if runs(got) != "a:gpu_clock_cap,gpu_throttle" {
		t.Fatalf("first pass: %q", runs(got))
	}
	if got[0].By != "serve auto" || got[0].Steps != ondemand.DefaultTriggerSteps {
		t.Errorf("trigger %+v", got[0])
	}
	// the same report again: nothing; a new report of a within the
	// interval: refused, and said
	if got := a.Decide([]Report{report("a", at, "gpu_throttle")}); len(got) != 0 {
		t.Fatalf("the same report raised %q", runs(got))
	}
	clk.Advance(time.Minute)
	if got := a.Decide([]Report{report("a", clk.Now(), "gpu_throttle")}); len(got) != 0 {
		t.Fatalf("within the interval: %q", runs(got))
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "run a") || !strings.Contains(logs[0], "captured 1m0s ago") {
		t.Errorf("logs %q", logs)
	}
	// max across runs: b, then c is refused
	clk.Advance(time.Minute)
	got = a.Decide([]Report{report("b", clk.Now(), "gpu_clock_cap"), report("c", clk.Now(), "gpu_clock_cap")})
	if runs(got) != "b:gpu_clock_cap" {
		t.Fatalf("max 2: %q", runs(got))
	}
	// after the interval, a is captured again
	clk.Advance(30 * time.Minute)
	if got := a.Decide([]Report{report("a", clk.Now(), "gpu_throttle")}); runs(got) != "a:gpu_throttle" {
		t.Fatalf("after the interval: %q", runs(got))
	}
}

// After sends each trigger through Send and logs what the agents said.
func TestAutoTriggerSends(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	cfg := config.Default().Serve.AutoTrigger
	cfg.Enabled, cfg.Detectors, cfg.Steps, cfg.Wait = true, []string{"gpu_clock_cap"}, 3, 50
	var mu sync.Mutex
	var logs []string
	sent := make(chan ondemand.TriggerMessage, 2)
	a := NewAuto(cfg, clk.Now, func(_ context.Context, m ondemand.TriggerMessage) ([]ondemand.TriggerReply, error) {
		sent <- m
		return []ondemand.TriggerReply{{Host: "n1", Run: m.Run, Capture: m.ID, Processes: []int{1}, Ranks: []int{0}}, {Host: "n2", Error: "busy"}}, nil
	}, func(f string, args ...any) { mu.Lock(); logs = append(logs, fmt.Sprintf(f, args...)); mu.Unlock() })
	a.After(context.Background(), []Report{report("job", clk.Now(), "gpu_clock_cap")})
	a.Wait()
	m := <-sent
	if m.Run != "job" || m.Steps != 3 || m.Wait != 50 || m.Reason != "gpu_clock_cap" {
		t.Errorf("sent %+v", m)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "automatic capture "+m.ID+" of run job (gpu_clock_cap): 1 of 2 agent(s) accepted") {
		t.Errorf("logs %q", logs)
	}
}
