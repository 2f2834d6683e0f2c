package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/trainscope/trainscope/internal/config"
)

// Exit statuses: 0 for nothing and for --help, 2 for a usage error, bad
// input or a bad config (wrapped or not), 1 for the rest; a command a
// signal cancelled exits 128+signal, saying so.
func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		says string
	}{
		{nil, 0, ""},
		{ErrHelp, 0, ""},
		{Usage("x: --y: bad"), 2, "trainscope: x: --y: bad\n"},
		{fmt.Errorf("read: %w", Input(errors.New("truncated"))), 2, "trainscope: read: truncated\n"},
		{&config.Error{Err: errors.New("bad key")}, 2, "trainscope: bad key\n"},
		{errors.New("disk full\n"), 1, "trainscope: disk full\n"},
	} {
		var b bytes.Buffer
		if code := ExitCode(c.err, &b); code != c.code || b.String() != c.says {
			t.Errorf("ExitCode(%v) = %d, %q; want %d, %q", c.err, code, b.String(), c.code, c.says)
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&Interrupted{syscall.SIGTERM})
	var b bytes.Buffer
	if code := Exit(ctx, errors.New("context canceled"), &b); code != 143 || b.String() != "trainscope: interrupted by SIGTERM: context canceled\n" {
		t.Errorf("Exit after SIGTERM = %d, %q", code, b.String())
	}
	if code := Exit(ctx, ErrHelp, &b); code != 0 {
		t.Errorf("Exit(ErrHelp) after SIGTERM = %d", code)
	}
}
