// Package kineto reads PyTorch profiler (Kineto) Chrome-trace JSON, plain or
// gzip-compressed, into trainscope's column tables.
//
// The reader streams: it inflates (in a goroutine of its own, so inflating
// and parsing use two cores) into a refillable window and walks the bytes
// with a purpose-built scanner that allocates only for strings it has not
// seen before. It never decodes events into generic maps. Each event is
// parsed whole before anything is stored, so a truncated file stores
// nothing half-done and the error names the byte offset.
//
// What it understands: ph X, B/E, i/I, s/t/f, M and C; ts and dur as numbers
// or strings (microseconds with nanosecond fractions, kept exactly as int64
// nanoseconds); baseTimeNanoseconds (added to relative timestamps);
// distributedInfo (rank, world size, process groups) and deviceProperties;
// ProfilerStep#N ranges as steps; ac2g flows and correlation ids linking
// each runtime launch to its GPU activity; NCCL kernel arguments; ROCm
// traces; [memory] instants and C events as counters; HTA's memory timeline
// export; and PyTorch Execution Traces, which it recognises and counts.
// A pickle or a CUDA memory snapshot passed as a trace is refused with an
// explanation.
//
// A trace too big to hold whole (Options.TwoPassBytes, ReadFileTwoPass) is
// read twice: the first pass keeps of each row only what the whole-file
// resolution below needs, the second hands the rows over in chunks of
// 256K, each complete; both give the same rows (twopass.go).
//
// It fills the neutral trace model (ingest/trace; Trace is an alias of
// trace.Trace). Steps: host events take the ProfilerStep range containing
// their start; GPU work takes the step of the runtime call that launched it
// (as HTA does), and records that call's start in launch_ts: trace.Derive,
// the pass the nsys reader runs too.
package kineto
