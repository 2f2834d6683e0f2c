// Command gpx_trainscope is the backend of the trainscope Grafana data
// source. Grafana starts it as a subprocess and talks to it over gRPC
// (hashicorp/go-plugin); it is never run by hand.
//
// It is pure Go and only queries: no cgo, no DuckDB, nothing of the
// product's readers, detectors or store. imports_test.go fails when a
// non-test file of this module imports any of them, or when a dependency of
// its non-test packages needs cgo; the end-to-end tests that load DuckDB
// keep the product to their _test.go files (e2e/demostore_test.go).
package main
