package transport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TransientJS says whether err, from a JetStream API call, is trouble of
// the moment that the same call may get past a little later: the request
// timed out (a cluster electing a leader, a node down, a loaded server),
// nobody answered it yet, or JetStream said it is temporarily unavailable
// (503). A refusal (a config the stream cannot take, a missing stream) is
// not.
func TransientJS(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 503
}

// retryFirstWait is the wait after the first failed try; it doubles up to
// retryMaxWait.
var retryFirstWait = 250 * time.Millisecond

const retryMaxWait = 5 * time.Second

// RetryJS runs fn until it succeeds, fails for a reason TransientJS does
// not take for transient, ctx ends, or limit has passed since the first
// try; it tells logf of each retry. Set-up calls at a server's start use
// it: a NATS cluster that lost a node, or is still electing its leaders,
// answers them late, and a pod that gives up at once only restarts into
// the same wait.
func RetryJS(ctx context.Context, limit time.Duration, logf func(string, ...any), what string, fn func() error) error {
	start := time.Now()
	wait := retryFirstWait
	for tries := 1; ; tries++ {
		err := fn()
		if err == nil || !TransientJS(err) || ctx.Err() != nil {
			return err
		}
		if time.Since(start)+wait > limit {
			return fmt.Errorf("%w (gave up after %d tries in %s)", err, tries, time.Since(start).Round(time.Millisecond))
		}
		if logf != nil {
			hint := ""
			if errors.Is(err, nats.ErrNoResponders) {
				hint = "; no JetStream answered: is it enabled on the server?"
			}
			logf("%s: %v (try %d%s; trying again in %s)", what, err, tries, hint, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, retryMaxWait)
	}
}
