package ondemand

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrNoAgents says that no agent listens for the run's triggers: NATS
// answered that the subject has no subscriber.
var ErrNoAgents = errors.New("no agent listens for this run's triggers")

// maxReplyBytes bounds one agent's reply.
const maxReplyBytes = 1 << 20

// Ask sends m to every agent of m.Run in cluster (core NATS, on
// TriggerSubject) and gathers their replies until timeout, until want
// replies came (want > 0), or until ctx ends. It checks m first (l, as
// EncodeTrigger). A reply that cannot be read is kept as one with Error
// set. With no agent subscribed it returns ErrNoAgents at once; a server
// that refuses this connection the subject says so (a permissions
// violation).
func Ask(ctx context.Context, nc *nats.Conn, cluster string, m TriggerMessage, l Limits, want int, timeout time.Duration) ([]TriggerReply, error) {
	b, err := EncodeTrigger(m, l)
	if err != nil {
		return nil, err
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	subject := TriggerSubject(cluster, m.Run)
	if err := nc.PublishRequest(subject, inbox, b); err != nil {
		return nil, fmt.Errorf("trigger on %s: %w", subject, err)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := nc.FlushWithContext(wctx); err != nil {
		return nil, fmt.Errorf("trigger on %s: %w", subject, err)
	}
	// a refused publish comes back before the answer to the flush
	if err := nc.LastError(); errors.Is(err, nats.ErrPermissionViolation) {
		return nil, fmt.Errorf("trigger on %s: %w", subject, err)
	}
	var out []TriggerReply
	for want <= 0 || len(out) < want {
		msg, err := sub.NextMsgWithContext(wctx)
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("run %s (%s): %w", m.Run, subject, ErrNoAgents)
		}
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			if wctx.Err() != nil {
				break // the time for answers is over
			}
			return out, err
		}
		if len(msg.Data) == 0 && msg.Header.Get("Status") == "503" {
			return nil, fmt.Errorf("run %s (%s): %w", m.Run, subject, ErrNoAgents)
		}
		var r TriggerReply
		if len(msg.Data) > maxReplyBytes {
			r.Error = fmt.Sprintf("a reply of %d bytes, at most %d", len(msg.Data), maxReplyBytes)
		} else if err := json.Unmarshal(msg.Data, &r); err != nil {
			r.Error = "an unreadable reply: " + err.Error()
		}
		out = append(out, r)
	}
	return out, nil
}

// Accepted counts the replies that configured a capture.
func Accepted(replies []TriggerReply) int {
	n := 0
	for _, r := range replies {
		if r.Error == "" && r.Capture != "" {
			n++
		}
	}
	return n
}
