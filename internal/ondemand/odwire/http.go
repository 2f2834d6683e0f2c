package odwire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trainscope/trainscope/internal/ondemand"
	"github.com/trainscope/trainscope/stream"
)

// HTTPRequest is the optional JSON body of POST /runs/{id}/trigger: what
// 'trainscope trigger' takes as flags. An empty body asks for the
// defaults (5 steps from a multiple of 10).
type HTTPRequest struct {
	Steps      int   `json:"steps,omitempty"`
	Wait       int   `json:"wait,omitempty"`
	DurationMS int64 `json:"duration_ms,omitempty"`
	Shapes     bool  `json:"shapes,omitempty"`
	Stacks     bool  `json:"stacks,omitempty"`
	Memory     bool  `json:"memory,omitempty"`
	// Agents stops gathering answers once this many came; TimeoutMS is
	// how long they are gathered (5 s, at most a minute).
	Agents    int   `json:"agents,omitempty"`
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// HTTPReply is the endpoint's answer: the capture's id and every agent's
// reply. Status 200 when an agent accepted, 409 when all that answered
// refused, 504 when none answered, 404 when no agent listens for the run.
type HTTPReply struct {
	Capture  string                  `json:"capture"`
	Run      string                  `json:"run"`
	Accepted int                     `json:"accepted"`
	Replies  []ondemand.TriggerReply `json:"replies"`
	Error    string                  `json:"error,omitempty"`
}

// TriggerHandler is serve's POST /runs/{id}/trigger: it asks the run's
// agents for a capture over nc, as 'trainscope trigger' does, and answers
// with their replies as JSON. The server's token guards it like every
// other endpoint.
func TriggerHandler(nc *nats.Conn, cluster string, now func() time.Time, logf func(string, ...any)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		run := r.PathValue("id")
		reply := func(code int, body HTTPReply) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			enc.Encode(body)
		}
		bad := func(err error) { reply(http.StatusBadRequest, HTTPReply{Run: run, Error: err.Error()}) }
		if err := stream.CheckRunID(run); err != nil {
			bad(err)
			return
		}
		var req HTTPRequest
		body, err := io.ReadAll(io.LimitReader(r.Body, ondemand.MaxTriggerBytes+1))
		if err != nil {
			bad(err)
			return
		}
		if len(body) > ondemand.MaxTriggerBytes {
			bad(fmt.Errorf("a body of more than %d bytes", ondemand.MaxTriggerBytes))
			return
		}
		if len(body) > 0 {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil {
				bad(fmt.Errorf("body: %w", err))
				return
			}
		}
		timeout := 5 * time.Second
		if req.TimeoutMS > 0 {
			timeout = min(time.Duration(req.TimeoutMS)*time.Millisecond, time.Minute)
		}
		if req.Agents < 0 || req.TimeoutMS < 0 {
			bad(errors.New("agents and timeout_ms may not be negative"))
			return
		}
		m := ondemand.NewTrigger(run, req.Steps, req.Wait, "serve "+r.RemoteAddr, now())
		if req.DurationMS != 0 {
			m.Steps, m.Wait, m.DurationMS = 0, 0, req.DurationMS
			if req.Steps != 0 {
				bad(errors.New("give steps or duration_ms, not both"))
				return
			}
		}
		m.Shapes, m.Stacks, m.Memory = req.Shapes, req.Stacks, req.Memory
		if err := m.Check(ondemand.Limits{}); err != nil {
			bad(err)
			return
		}
		replies, err := ondemand.Ask(r.Context(), nc, cluster, m, ondemand.Limits{}, req.Agents, timeout)
		out := HTTPReply{Capture: m.ID, Run: run, Replies: replies, Accepted: ondemand.Accepted(replies)}
		if out.Replies == nil {
			out.Replies = []ondemand.TriggerReply{}
		}
		code := http.StatusOK
		switch {
		case errors.Is(err, ondemand.ErrNoAgents):
			code, out.Error = http.StatusNotFound, err.Error()+": no agent with --on-demand serves this run"
		case errors.Is(err, context.Canceled):
			return // the asker went away
		case err != nil:
			code, out.Error = http.StatusBadGateway, err.Error()
		case len(replies) == 0:
			code, out.Error = http.StatusGatewayTimeout, fmt.Sprintf("no agent answered within %s", timeout)
		case out.Accepted == 0:
			code, out.Error = http.StatusConflict, "every agent that answered refused"
		}
		logf("on-demand: capture %s of run %s asked by %s: %d of %d agent(s) accepted%s", m.ID, run, m.By, out.Accepted, len(replies), orErr(out.Error))
		reply(code, out)
	}
}

func orErr(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
