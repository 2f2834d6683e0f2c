package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/trainscope/trainscope/internal/config"
)

// UsageError is a mistake on the command line; it exits with code 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usage is a *UsageError saying msg.
func Usage(msg string) error { return &UsageError{msg} }

// InputError is bad input data; it exits with code 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Input marks err as bad input (an *InputError).
func Input(err error) error { return &InputError{err} }

// ErrHelp is what a command returns when it printed its --help.
var ErrHelp = errors.New("help requested")

// Exit is the exit status of a command that returned err: a command a
// signal cancelled (ctx's cause an *Interrupted) exits 128+signal, saying
// so before what it returned; any other error is ExitCode's.
func Exit(ctx context.Context, err error, errOut io.Writer) int {
	var in *Interrupted
	if err != nil && !errors.Is(err, ErrHelp) && errors.As(context.Cause(ctx), &in) {
		// what the command says is the cancellation, not its cause
		fmt.Fprintf(errOut, "trainscope: %s: %s\n", in, strings.TrimSpace(err.Error()))
		return in.Code()
	}
	return ExitCode(err, errOut)
}

// ExitCode prints err as one line and maps it to the exit status: 0 ok,
// 2 bad usage, bad input or a bad config, 1 anything else.
func ExitCode(err error, errOut io.Writer) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, ErrHelp) {
		return 0
	}
	msg := strings.TrimSpace(err.Error())
	fmt.Fprintf(errOut, "trainscope: %s\n", msg)
	var ue *UsageError
	var ie *InputError
	var ce *config.Error
	if errors.As(err, &ue) || errors.As(err, &ie) || errors.As(err, &ce) {
		return 2
	}
	return 1
}
