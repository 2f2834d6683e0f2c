// Package watch is the file-watching core of `trainscope agent --watch DIR`:
// it finds the traces torch.profiler writes into a folder and hands each one
// to a Publisher once, after it is complete.
//
// torch.profiler's tensorboard_trace_handler writes
// <worker>.<timestamp_ms>.pt.trace.json(.gz) in place, not via an atomic
// rename, so a file that exists may still be half written. The watcher
// therefore polls (os.ReadDir plus one lstat per matching file; no fsnotify,
// whose event semantics differ per platform and filesystem and which misses
// writes on network filesystems) and calls the publisher only for a file
// whose size and mtime it has seen unchanged for Config.Settle. Stability is
// judged by the watcher's own observations, never by comparing mtime with
// the local clock, so clock skew on a network filesystem cannot make a file
// look finished early.
//
// Contract:
//
//   - Files are published one at a time, oldest mtime first. A file's
//     version is its (size, mtime): a version is published at most once per
//     state file, except across a crash (below).
//   - The publisher returns ErrIncomplete when the file turned out to be
//     partial (the agent maps the reader's truncation error to it): the
//     watcher retries later. Any other error is logged and retried too. Both
//     back off (Settle, doubling, at most a minute) and stop after GiveUp,
//     measured from the first attempt on that version: the file is then
//     recorded as failed with its error and not retried. A file that changes
//     meanwhile is a new version and starts over, and so does a published or
//     failed file that is later modified (the log says so).
//   - The state (Config.StatePath, JSON, see the state type) is rewritten
//     atomically (temp file in the same folder, fsync, rename, fsync of the
//     folder) after every change and loaded at start. Entries for files that
//     are gone are pruned, so it stays as small as the folder. A corrupt
//     state file stops the watcher with an error that says how to recover;
//     it is never silently replaced, which would republish everything.
//   - Crash safety: the state is written after the publisher returns nil, so
//     a crash between the two publishes that file again on restart. The
//     publisher must make that idempotent: FileID (also in FileOf(ctx))
//     gives a stable id per file version to use as the message id, so
//     JetStream and the ingestor drop the duplicate.
//   - Run returns nil when ctx is cancelled; the publisher must honour ctx
//     for that to be prompt. Once processes what is there and returns.
//   - One watcher per state file: two processes sharing one would overwrite
//     each other's records (harmless with idempotent publishing, but
//     wasteful).
//
// Cost: idle, a poll is one directory read and one lstat per matching file
// (see BenchmarkPollIdle), every Config.Poll; memory is one small record per
// file present. Retry state lives in memory only, so a restart gives a
// failing file a fresh GiveUp period.
package watch
