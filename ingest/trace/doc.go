// Package trace is the neutral trace model every timeline reader fills:
// a Trace holds one rank's slices, steps, counters and metadata as column
// tables of the stream package, whichever profiler wrote the file. The
// Kineto reader (ingest/kineto) and the Nsight Systems reader
// (ingest/nsys) both produce it; ingest turns it into table batches
// without knowing which reader it came from.
//
// What needs every row of a trace is resolved once, the same way for
// every reader, by Derive: the steps table, the step of every slice and
// the launch time of GPU work (after Holistic Trace Analysis: GPU work
// takes the step of the runtime or driver call that launched it, matched
// by correlation id), host self times and call stacks, the step-time
// account (ingest/timeline) and the trace's span. A reader collects its
// step ranges and rows, then calls Derive.
package trace
