// Package stream is trainscope's event model: the Arrow schema of every table
// (slices, steps, counters, mem_*), the column builders that readers fill,
// the ranges of values a batch may hold (CheckRanges, CheckRunID), the
// names a run goes by (RunToken in subjects, RunPathToken in files) and the
// record of a batch that never arrived (Gap, MissingReason).
//
// stream is the leaf of the import graph: it imports nothing of ours, and
// links no NATS. Its transport (the wire codec, the message checks,
// subjects, the JetStream stream, the embedded server, connections and the
// publisher) is stream/transport, which the store, the detectors and the
// readers do not import.
//
// Ownership: a reader fills a table builder (SliceTable, StepTable, ...) and
// turns it into an arrow.RecordBatch with Record. The record wraps the
// builder's Go slices without copying; the caller owns the record and must
// Release it, and must not append to the builder afterwards. A stage that keeps
// a record past the call that handed it over calls Retain.
//
// Times are int64 nanoseconds since the Unix epoch; durations int64 ns.
// Repeated strings are dictionary-encoded (int32 indices into a per-record
// dictionary).
package stream
