// Package memsnap reads CUDA caching-allocator snapshots, the JSON that
// torch.cuda.memory._snapshot() returns (plain or gzip), into the
// mem_segments, mem_blocks and mem_events tables.
//
// It streams with the shared jsonscan scanner: snapshots reach hundreds of
// MB because every block and trace entry carries a stack, and only one
// allocation site per row is kept (the first frame outside torch
// internals). Both block states for "freed but not yet reusable",
// active_pending_free (what PyTorch writes) and active_awaiting_free (what
// its docstring says), are kept as written. A pickle (_dump_snapshot's
// format) is never deserialized: the error says how to export JSON.
package memsnap
