// Package agent is trainscope's side of a training node: Run watches the
// folders torch.profiler writes into (one run's, or a folder of run
// folders under --runs-in), publishes each finished trace to JetStream
// once (in trigger mode only the steps asked for), and samples the
// node's GPU counters beside it; PublishFiles is the one-shot 'trainscope
// publish'. Connect joins the NATS stream they publish to.
//
// Traces reach the loop from Sources: the watched folder is one, and
// Options.Sources adds others (an on-demand capture that asks the local
// PyTorch processes for a trace) without changing the loop, which
// publishes whatever file a source hands it through one publisher.
//
// It lives under internal/: it is the binary's own wiring. It publishes
// and never diagnoses: it imports no detector (arch_test.go).
package agent
