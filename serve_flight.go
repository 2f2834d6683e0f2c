package main

import (
	"context"

	"github.com/trainscope/trainscope/sql/duck"
)

// startFlight serves read-only Flight SQL on addr over st. Not wired yet:
// the endpoint is reported as off.
func startFlight(ctx context.Context, addr string, st *duck.Store, logf func(string, ...any)) (string, func() error, error) {
	logf("Flight SQL is not in this build yet; %s is not served", addr)
	return "", nil, nil
}
