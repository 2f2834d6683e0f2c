// Package live is the always-on server's detector scheduler: it hears
// which runs each ingest commit touched, waits until a run has gone quiet
// and everything the stream holds for it is stored, analyses it in a
// scratch database of its own, writes its findings, metrics and causes
// back, and keeps the latest report of every run (in memory and under
// DataDir/reports, so that a restart serves them again).
//
// The scheduler knows nothing of NATS or HTTP: the caller says when
// commits land (Touched), why a run may still be incomplete (Options.
// PendingWhy, from ingest.Backlog), what time it is and when to look
// (Options.Now and the ticks given to Run). Tests drive it with a fake
// clock and no server. Reports are read by the HTTP API
// (detectors/httpapi) through Report and List.
//
// Imports: sql/duck and detectors. It must not import ingest or stream's
// transport: the serve command wires those in.
package live
