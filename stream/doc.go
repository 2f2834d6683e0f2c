// Package stream is trainscope's event model: the Arrow schema of every table
// (slices, steps, counters, mem_*), the column builders that readers fill,
// and the wire codec (one Arrow IPC stream per message, labelled with its
// table and schema version; Messages bounds message size), and the JetStream
// side: subjects, the stream, the embedded server, connections and the
// publisher (async, bounded in flight, Nats-Msg-Id = producer + sequence).
//
// stream is the leaf of the import graph: it imports nothing of ours.
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
