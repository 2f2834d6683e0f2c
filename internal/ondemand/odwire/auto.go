package odwire

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/internal/ondemand"
)

// Report is what Auto reads of a live pass's report: the run, when it
// was made, and its JSON (the findings, each with its detector).
type Report struct {
	Run  string
	At   time.Time
	JSON []byte
}

// Auto is serve's automatic trigger: after a live pass, a finding of one
// of serve.auto_trigger.detectors (counter detectors: an SM clock, power
// or utilisation drop) on a run asks the run's agents for a capture, so
// that the trace that explains the drop arrives without a human. Limiter
// allows one capture per run per interval and a few across runs; a report
// is looked at once. The detectors are the config's, never this code's.
type Auto struct {
	Config  config.AutoTriggerConfig
	Limiter *ondemand.Limiter
	// Send asks the run's agents (ondemand.Ask on serve's connection).
	Send func(ctx context.Context, m ondemand.TriggerMessage) ([]ondemand.TriggerReply, error)
	Now  func() time.Time
	Logf func(format string, args ...any)

	mu   sync.Mutex
	seen map[string]time.Time // the report of each run last looked at
	wg   sync.WaitGroup
}

// NewAuto makes the automatic trigger of cfg (Limiter: cfg.Interval,
// cfg.Max, the clock now).
func NewAuto(cfg config.AutoTriggerConfig, now func() time.Time, send func(context.Context, ondemand.TriggerMessage) ([]ondemand.TriggerReply, error), logf func(string, ...any)) *Auto {
	return &Auto{Config: cfg, Limiter: &ondemand.Limiter{Every: cfg.Interval, Global: cfg.Max, Now: now}, Send: send, Now: now, Logf: logf}
}

// Decide looks at the reports of the last pass and returns the triggers
// to send: one per run whose new report holds a finding of a configured
// detector, when the limiter allows it (a refusal is logged).
func (a *Auto) Decide(reports []Report) []ondemand.TriggerMessage {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen == nil {
		a.seen = map[string]time.Time{}
	}
	var out []ondemand.TriggerMessage
	for _, r := range reports {
		if at, ok := a.seen[r.Run]; ok && !r.At.After(at) {
			continue
		}
		a.seen[r.Run] = r.At
		fired := a.fired(r)
		if len(fired) == 0 {
			continue
		}
		ok, _, err := a.Limiter.Allow(r.Run)
		if !ok {
			a.Logf("on-demand: %s fired on run %s; no automatic capture: %v", strings.Join(fired, ", "), r.Run, err)
			continue
		}
		m := ondemand.NewTrigger(r.Run, a.Config.Steps, a.Config.Wait, "serve auto", a.Now())
		m.Reason = strings.Join(fired, ",")
		if len(m.Reason) > 200 {
			m.Reason = m.Reason[:200]
		}
		out = append(out, m)
	}
	return out
}

// fired are the configured detectors with a finding on r's run.
func (a *Auto) fired(r Report) []string {
	var rep struct {
		Findings []struct {
			RunID    string `json:"run_id"`
			Detector string `json:"detector"`
		} `json:"findings"`
	}
	if json.Unmarshal(r.JSON, &rep) != nil {
		return nil
	}
	var out []string
	for _, f := range rep.Findings {
		if f.RunID == r.Run && slices.Contains(a.Config.Detectors, f.Detector) && !slices.Contains(out, f.Detector) {
			out = append(out, f.Detector)
		}
	}
	slices.Sort(out)
	return out
}

// After decides on the reports of a pass and sends each trigger in the
// background (the scheduler goes on); Wait waits for those in flight.
func (a *Auto) After(ctx context.Context, reports []Report) {
	for _, m := range a.Decide(reports) {
		a.wg.Go(func() {
			replies, err := a.Send(ctx, m)
			if err != nil {
				a.Logf("on-demand: automatic capture %s of run %s (%s): %v", m.ID, m.Run, m.Reason, err)
				return
			}
			a.Logf("on-demand: automatic capture %s of run %s (%s): %d of %d agent(s) accepted",
				m.ID, m.Run, m.Reason, ondemand.Accepted(replies), len(replies))
		})
	}
}

// Wait waits for the triggers in flight.
func (a *Auto) Wait() { a.wg.Wait() }
