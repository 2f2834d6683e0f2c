package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The signal watcher, on its own clock: the first signal cancels the
// context with an *Interrupted cause; a command that has not returned
// when the grace is over is ended with 128+signal; serve and agent, which
// stop on their own, are ended only by a second signal; nothing happens
// once the command returned.
func TestSignalWatch(t *testing.T) {
	type exit struct{ code int }
	setup := func(command string) (*signalWatch, chan os.Signal, chan struct{}, chan time.Time, chan exit, context.Context, *bytes.Buffer) {
		var errOut bytes.Buffer
		grace := make(chan time.Time, 1)
		exits := make(chan exit, 1)
		sw := &signalWatch{grace: signalGrace, errOut: &errOut,
			exit:  func(code int) { exits <- exit{code} },
			after: func(time.Duration) <-chan time.Time { return grace }}
		sw.running(command)
		ctx, cancel := context.WithCancelCause(context.Background())
		ch, done := make(chan os.Signal, 2), make(chan struct{})
		go func() { sw.watch(ch, done, cancel); close(exits) }()
		return sw, ch, done, grace, exits, ctx, &errOut
	}

	// analyze: the first signal, then the grace
	_, ch, _, grace, exits, ctx, errOut := setup("analyze")
	ch <- syscall.SIGINT
	<-ctx.Done()
	var in *Interrupted
	if !errors.As(context.Cause(ctx), &in) || in.Code() != 130 {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
	grace <- time.Time{}
	if e := <-exits; e.code != 130 || !strings.Contains(errOut.String(), "analyze did not stop within 3s") {
		t.Errorf("exit %d, %q", e.code, errOut.String())
	}

	// serve: no grace; a second signal ends it
	sw, ch, _, grace, exits, ctx, errOut := setup("serve")
	if sw.grace != 0 {
		t.Errorf("serve has a grace of %s", sw.grace)
	}
	ch <- syscall.SIGTERM
	<-ctx.Done()
	ch <- syscall.SIGINT
	if e := <-exits; e.code != 143 || !strings.Contains(errOut.String(), "interrupted by SIGTERM again (SIGINT)") {
		t.Errorf("exit %d, %q", e.code, errOut.String())
	}
	if len(grace) != 0 {
		t.Error("serve's grace timer was read")
	}

	// the command returned: the watcher leaves
	_, ch, done, _, exits, ctx, _ := setup("analyze")
	ch <- syscall.SIGINT
	<-ctx.Done()
	close(done)
	if _, ok := <-exits; ok {
		t.Error("exited after the command returned")
	}
}
