// Package ingest turns artifacts into trainscope's tables. Readers live in
// subpackages (kineto for PyTorch profiler traces, nsys for Nsight Systems
// exports, memsnap for CUDA memory snapshots, ncu for Nsight Compute
// exports, dcgm for saved Prometheus scrapes, script for launch scripts)
// and produce column tables from the stream package. Each format is one
// Reader here (formats.go): Sniff picks a file's Reader from its first
// bytes and name, the registry asking the ones that know a file by name or
// magic first and Kineto last. Timelines, whichever reader made them, are
// one neutral model (ingest/trace), whose steps, launches, self times and
// step-time account trace.Derive resolves the same way for every reader.
// This package finds the artifacts in the
// paths a user gives, reads them in parallel and hands their record
// batches to a Sink: a DuckDB store (analyze) or the JetStream publisher
// (publish, agent). Consumer is the other end of the stream: it moves
// published batches into the store.
//
// Contract: a file is loaded whole or not at all. A reader error names the
// file and the byte offset and what was expected there; Load stops at the
// first bad file and returns that error, so nothing is silently dropped.
// Load inserts each file's batches as soon as that file is read, so reading
// the next files overlaps with inserting the previous ones; records are
// released after insert.
//
// Consumer contract (DESIGN.md): a message is acknowledged only after the
// transaction holding its rows and its message id has committed; a message
// whose id is already recorded is acknowledged without inserting; a message
// that can never be ingested is recorded in rejected_batches, with its
// headers, and terminated, never retried forever. A failed transaction
// naks every message of the fetch, so they come back. In a staged store
// (duck.Options.Staged) the slices of a fetch are written as Parquet files
// first (stage.go) and recorded in that same transaction; trouble writing
// them is transient, never poison. A run's small files are merged once
// there are compactFiles of them (stage_compact.go): their row groups
// copied as they are under one footer (stage_concat.go), or, for files of
// few rows, decoded and written again (stage_merge.go); the merged file is
// swapped in at a commit when no Reader of the store is open.
package ingest
