// Package ingest turns artifacts into trainscope's tables. Readers live in
// subpackages (kineto today; nsys, memsnap, dcgm and script later) and
// produce column tables from the stream package; this package finds the
// artifacts in the paths a user gives, runs the readers in parallel and
// moves their record batches into a DuckDB store.
//
// Contract: a file is loaded whole or not at all. A reader error names the
// file and the byte offset and what was expected there; Load stops at the
// first bad file and returns that error, so nothing is silently dropped.
// Load inserts each file's batches as soon as that file is read, so reading
// the next files overlaps with inserting the previous ones; records are
// released after insert.
package ingest
