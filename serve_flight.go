package main

import (
	"context"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/sql/flightsrv"
)

// startFlight serves read-only Flight SQL on addr over st; each query runs
// on a reader connection of its own, beside the ingestor's writes.
func startFlight(ctx context.Context, addr string, st *duck.Store, logf func(string, ...any)) (string, func() error, error) {
	a, stop, err := flightsrv.Serve(ctx, addr, st, logf)
	if err != nil {
		return "", nil, err
	}
	return a.String(), stop, nil
}
