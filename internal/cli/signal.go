package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// SignalContext is cancelled by SIGINT or SIGTERM (its cause an
// *Interrupted): long-running commands (serve, agent) stop cleanly on
// either, the others stop what they read and exit 128+signal. A second
// signal ends the process at once; so does the first when the command has
// not returned signalGrace after it (one stuck in a read that ignores the
// context). serve and agent, which take the time a clean stop needs, are
// ended only by a second signal. TRAINSCOPE_SIGNAL_GRACE (a duration; 0:
// wait for a second signal) changes the grace. stop releases the signals.
func SignalContext() (context.Context, context.CancelFunc) {
	grace := signalGrace
	if v := os.Getenv("TRAINSCOPE_SIGNAL_GRACE"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			grace = max(d, 0)
		}
	}
	sw := &signalWatch{grace: grace, errOut: os.Stderr, exit: os.Exit, after: time.After}
	ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), signalKey{}, sw))
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go sw.watch(ch, done, cancel)
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel(context.Canceled)
		})
	}
}

// Running tells the signal watch of ctx (SignalContext's) which command
// runs now, and so how long it has to stop.
func Running(ctx context.Context, name string) {
	if sw, ok := ctx.Value(signalKey{}).(*signalWatch); ok {
		sw.running(name)
	}
}

// signalGrace is how long a command other than serve and agent has, after
// the first SIGINT or SIGTERM, to stop on its own.
const signalGrace = 3 * time.Second

// stopsOnItsOwn are the commands a first signal only asks to stop: they
// drain and save what they hold, however long that takes.
var stopsOnItsOwn = map[string]bool{"serve": true, "agent": true}

type signalKey struct{}

// signalWatch ends the process on the signals that its command did not
// stop on.
type signalWatch struct {
	mu      sync.Mutex
	command string
	grace   time.Duration // 0: only a second signal forces the exit
	errOut  io.Writer
	exit    func(code int)
	after   func(time.Duration) <-chan time.Time
}

// running says which command runs now, and so how long it has to stop.
func (w *signalWatch) running(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.command = name
	if stopsOnItsOwn[name] {
		w.grace = 0
	}
}

// watch cancels the context on the first signal, then exits on a second
// one or when the grace is over, unless done closes first.
func (w *signalWatch) watch(ch <-chan os.Signal, done <-chan struct{}, cancel context.CancelCauseFunc) {
	var sig os.Signal
	select {
	case sig = <-ch:
	case <-done:
		return
	}
	cause := &Interrupted{sig}
	cancel(cause)
	w.mu.Lock()
	name, grace := w.command, w.grace
	w.mu.Unlock()
	if name == "" {
		name = "trainscope"
	}
	fmt.Fprintf(w.errOut, "trainscope: %s: stopping (a second signal exits at once)\n", cause)
	var timeout <-chan time.Time
	if grace > 0 {
		timeout = w.after(grace)
	}
	select {
	case again := <-ch:
		fmt.Fprintf(w.errOut, "trainscope: %s again (%s): exiting now\n", cause, signalName(again))
	case <-timeout:
		fmt.Fprintf(w.errOut, "trainscope: %s: %s did not stop within %s; exiting\n", cause, name, grace)
	case <-done:
		return
	}
	w.exit(cause.Code())
}

// Interrupted is the cause of a context a signal cancelled.
type Interrupted struct{ Sig os.Signal }

func (e *Interrupted) Error() string { return "interrupted by " + signalName(e.Sig) }

// Code is the exit status of a process the signal ended: 128+signal, as a
// shell reports one (130 for SIGINT, 143 for SIGTERM).
func (e *Interrupted) Code() int {
	if s, ok := e.Sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}
