// Package server composes 'trainscope serve': Start wires NATS (embedded,
// or a cluster), the stream and the ingestor's consumers (partitioned
// among several ingestors or not), the DuckDB store, the detector
// scheduler, Flight SQL and the HTTP API from one config.Config, behind
// the listeners' token and TLS; StartQueryNode serves the fleet archive
// instead. Shutdown stops either in the order that loses nothing. Run is
// the command itself: the config with its Flags over it, Start (or
// StartQueryNode), the log line, and Shutdown when the context ends. The
// accessors (addresses, the store, the scheduler, the ingest counters)
// are for the command's log line and for tests.
//
// It lives under internal/: only the trainscope binary (the root package)
// imports it (arch_test.go).
package server
