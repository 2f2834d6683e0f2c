package ondemand

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/trainscope/trainscope/stream"
)

// TriggerRoot is the first token of trigger subjects. It is not
// "trainscope": the JetStream stream captures every subject under
// trainscope.<cluster>.>, and a trigger is a command to the agents, not a
// batch to store. Triggers go over core NATS (request-reply: each agent
// of the run answers with a TriggerReply).
const TriggerRoot = "trainscope-trigger"

// TriggerSubject is where triggers for run go:
// trainscope-trigger.<cluster>.<run token>, the tokens made as the
// transport makes them (stream.RunToken). Several runs may share a token;
// the payload carries the exact run id and an agent acts only on its own.
func TriggerSubject(cluster, run string) string {
	return TriggerRoot + "." + stream.RunToken(cluster) + "." + stream.RunToken(run)
}

// TriggerSubjectAll is what an agent that serves every run on its node
// (--runs-in) subscribes to.
func TriggerSubjectAll(cluster string) string {
	return TriggerRoot + "." + stream.RunToken(cluster) + ".*"
}

// TriggerVersion is the payload's version; a message of another is
// refused.
const TriggerVersion = 1

// MaxTriggerBytes bounds a trigger message.
const MaxTriggerBytes = 4096

// DefaultTriggerSteps and DefaultTriggerWait are what `trainscope trigger`
// asks for without --steps and --wait: 5 steps, from the next step that is
// a multiple of 10. Ten steps cover libkineto's 5 s poll for steps of half
// a second or more, so every rank has its config before the step comes
// round.
const (
	DefaultTriggerSteps = 5
	DefaultTriggerWait  = 10
)

// TriggerMessage is the payload of `trainscope trigger --run ID [--steps N]
// [--wait M]`, of serve's trigger endpoint and of an automatic trigger:
// JSON on TriggerSubject.
type TriggerMessage struct {
	V   int    `json:"v"`
	ID  string `json:"id"` // the capture's id on every agent: traces are named by it
	Run string `json:"run"`
	// Steps > 0: trace that many iterations from the next step that is a
	// multiple of Wait. Else DurationMS milliseconds, from StartAtMS (Unix
	// ms) when set.
	Steps      int   `json:"steps,omitempty"`
	Wait       int   `json:"wait,omitempty"`
	DurationMS int64 `json:"duration_ms,omitempty"`
	StartAtMS  int64 `json:"start_at_ms,omitempty"`
	Toggles
	// PIDs narrows the capture to these processes (one host's use).
	PIDs []int `json:"pids,omitempty"`
	// By is who asked; Reason why ("manual", or the detector that fired).
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
	// SentMS is when it was sent (Unix ms).
	SentMS int64 `json:"sent_ms"`
}

// TriggerReply is an agent's answer to a trigger.
type TriggerReply struct {
	Host    string `json:"host"`
	Run     string `json:"run"`
	Capture string `json:"capture,omitempty"`
	// Processes are the processes configured; Ranks their ranks (-1
	// unknown), in the same order.
	Processes []int    `json:"processes,omitempty"`
	Ranks     []int    `json:"ranks,omitempty"`
	Paths     []string `json:"paths,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// NewTrigger makes a trigger message for run at now: steps (default
// DefaultTriggerSteps) from a multiple of wait (default
// DefaultTriggerWait), with a fresh id.
func NewTrigger(run string, steps, wait int, by string, now time.Time) TriggerMessage {
	if steps == 0 {
		steps = DefaultTriggerSteps
	}
	tok := fileToken(run)
	if len(tok) > 24 {
		tok = tok[:24]
	}
	if wait == 0 {
		wait = DefaultTriggerWait
	}
	return TriggerMessage{
		V: TriggerVersion, ID: fmt.Sprintf("od%d-%s", now.UnixMilli(), tok),
		Run: run, Steps: steps, Wait: wait, By: by, Reason: "manual", SentMS: now.UnixMilli(),
	}
}

// Check validates m against l (DefaultLimits where a field is zero):
// the version, a run id, an id, exactly one of steps and a duration, each
// within the limits, and printable requester and reason.
func (m TriggerMessage) Check(l Limits) error {
	l = l.withDefaults()
	if m.V != TriggerVersion {
		return fmt.Errorf("trigger version %d, this agent reads %d", m.V, TriggerVersion)
	}
	if err := stream.CheckRunID(m.Run); err != nil {
		return fmt.Errorf("trigger: %w", err)
	}
	if err := CheckID(m.ID); err != nil {
		return fmt.Errorf("trigger: %w", err)
	}
	if m.DurationMS < 0 || m.StartAtMS < 0 || m.SentMS < 0 {
		return fmt.Errorf("trigger: negative time")
	}
	if m.DurationMS > l.MaxDuration.Milliseconds() {
		return fmt.Errorf("trigger: a %d ms capture, at most %v", m.DurationMS, l.MaxDuration)
	}
	if m.StartAtMS != 0 && m.Steps > 0 {
		return fmt.Errorf("trigger: a start time is for duration captures")
	}
	if len(m.PIDs) > MaxPIDs {
		return fmt.Errorf("trigger: %d pids, at most %d", len(m.PIDs), MaxPIDs)
	}
	for _, p := range m.PIDs {
		if p <= 0 || p > 1<<30 {
			return fmt.Errorf("trigger: pid %d", p)
		}
	}
	for _, s := range []struct{ name, v string }{{"by", m.By}, {"reason", m.Reason}} {
		if len(s.v) > 200 {
			return fmt.Errorf("trigger: %s of %d bytes, at most 200", s.name, len(s.v))
		}
		for _, c := range s.v {
			if c < 0x20 || c == 0x7f || c == 0xfffd {
				return fmt.Errorf("trigger: %s %q holds a control or invalid character", s.name, s.v)
			}
		}
	}
	// the rest as the daemon checks a request (the output folder is the
	// agent's, so a stand-in passes)
	r := m.Request("/tmp")
	now := time.UnixMilli(m.SentMS)
	if !r.StartAt.IsZero() {
		now = r.StartAt // the start's distance from now is the agent's to judge
	}
	if err := l.check(r, now); err != nil {
		return fmt.Errorf("trigger: %w", err)
	}
	return nil
}

// Request is the capture m asks of an agent whose traces go to outputDir.
func (m TriggerMessage) Request(outputDir string) Request {
	r := Request{
		ID: m.ID, Run: m.Run, PIDs: m.PIDs, Steps: m.Steps, Wait: m.Wait,
		Duration: time.Duration(m.DurationMS) * time.Millisecond, OutputDir: outputDir,
		Toggles: m.Toggles, By: m.By,
	}
	if m.StartAtMS != 0 {
		r.StartAt = time.UnixMilli(m.StartAtMS)
	}
	if m.Reason != "" && m.Reason != "manual" {
		r.By = strings.TrimSpace(r.By + " (" + m.Reason + ")")
	}
	if len(r.By) > 200 {
		r.By = r.By[:200]
	}
	return r
}

// EncodeTrigger checks m and encodes it.
func EncodeTrigger(m TriggerMessage, l Limits) ([]byte, error) {
	if err := m.Check(l); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// DecodeTrigger reads and checks a trigger message: at most
// MaxTriggerBytes of one JSON object, no unknown fields (a newer sender
// bumps V).
func DecodeTrigger(b []byte, l Limits) (TriggerMessage, error) {
	if len(b) > MaxTriggerBytes {
		return TriggerMessage{}, fmt.Errorf("trigger of %d bytes, at most %d", len(b), MaxTriggerBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m TriggerMessage
	if err := dec.Decode(&m); err != nil {
		return TriggerMessage{}, fmt.Errorf("trigger: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return TriggerMessage{}, fmt.Errorf("trigger: data after the JSON object")
	}
	if err := m.Check(l); err != nil {
		return TriggerMessage{}, err
	}
	return m, nil
}

// ReplyFor is an agent's answer for capture c, or for the error err.
func ReplyFor(host, run string, c *Capture, err error) TriggerReply {
	r := TriggerReply{Host: host, Run: run}
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Capture = c.ID
	for _, t := range c.Targets {
		r.Processes = append(r.Processes, t.PID)
		r.Ranks = append(r.Ranks, t.Rank)
		r.Paths = append(r.Paths, t.Paths[0])
	}
	return r
}
