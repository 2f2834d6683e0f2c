// Package perfetto exports the analysed window of a run as a Chrome trace
// (JSON) that ui.perfetto.dev and chrome://tracing open, with the report's
// findings marked on it: late arrivals as instants with flows to the peers
// that waited, and one marker per root cause. The export keeps the
// arguments trainscope's Kineto reader reads, so it can be analysed again.
package perfetto
