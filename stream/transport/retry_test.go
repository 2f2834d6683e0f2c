package transport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestTransientJS(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("set up consumer x: %w", context.DeadlineExceeded), true},
		{nats.ErrTimeout, true},
		{fmt.Errorf("wrapped: %w", nats.ErrNoResponders), true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{fmt.Errorf("set up stream: %w", &jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "stream name already in use with a different configuration"}), false},
		{jetstream.ErrStreamNotFound, false},
		{context.Canceled, false},
		{errors.New("something else"), false},
	} {
		if got := TransientJS(c.err); got != c.want {
			t.Errorf("TransientJS(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestRetryJS(t *testing.T) {
	defer func(w time.Duration) { retryFirstWait = w }(retryFirstWait)
	retryFirstWait = time.Millisecond
	unavailable := &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}
	refused := &jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "different configuration"}

	// transient twice, then done: three tries, two told
	calls := 0
	var told []string
	err := RetryJS(context.Background(), time.Minute, func(f string, a ...any) { told = append(told, fmt.Sprintf(f, a...)) }, "set up the stream", func() error {
		if calls++; calls < 3 {
			return unavailable
		}
		return nil
	})
	if err != nil || calls != 3 || len(told) != 2 || !strings.HasPrefix(told[0], "set up the stream: ") {
		t.Fatalf("err %v after %d calls, told %q", err, calls, told)
	}

	// nobody answering may be JetStream not enabled: the log says so
	calls, told = 0, nil
	_ = RetryJS(context.Background(), time.Minute, func(f string, a ...any) { told = append(told, fmt.Sprintf(f, a...)) }, "x", func() error {
		if calls++; calls < 2 {
			return nats.ErrNoResponders
		}
		return nil
	})
	if len(told) != 1 || !strings.Contains(told[0], "is it enabled on the server?") {
		t.Fatalf("no responders: told %q", told)
	}

	// a refusal is not tried again
	calls = 0
	err = RetryJS(context.Background(), time.Minute, nil, "x", func() error { calls++; return refused })
	if !errors.Is(err, refused) || calls != 1 {
		t.Fatalf("refusal: err %v after %d calls", err, calls)
	}

	// no time left: one try, and the error says it gave up
	calls = 0
	err = RetryJS(context.Background(), 0, nil, "x", func() error { calls++; return nats.ErrTimeout })
	if !errors.Is(err, nats.ErrTimeout) || calls != 1 || !strings.Contains(err.Error(), "gave up after 1 tries") {
		t.Fatalf("no time: err %v after %d calls", err, calls)
	}

	// a context that ends stops it
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	err = RetryJS(ctx, time.Minute, nil, "x", func() error {
		calls++
		cancel()
		return nats.ErrTimeout
	})
	if !errors.Is(err, nats.ErrTimeout) || calls != 1 {
		t.Fatalf("cancelled: err %v after %d calls", err, calls)
	}
}
