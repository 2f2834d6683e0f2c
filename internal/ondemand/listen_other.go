//go:build !linux

package ondemand

import (
	"context"
	"errors"
)

var errNotLinux = errors.New("ondemand: libkineto's daemon socket is Linux-only")

// Address is where a process sends to reach name (Linux only).
func Address(name, dir string) string { return "" }

// Listen fails: libkineto talks to a daemon on Linux only.
func (d *Daemon) Listen() error { return errNotLinux }

// Serve fails: libkineto talks to a daemon on Linux only.
func (d *Daemon) Serve(ctx context.Context) error { return errNotLinux }

type socket = any
