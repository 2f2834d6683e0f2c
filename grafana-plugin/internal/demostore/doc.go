// Package demostore loads the bundled sample run ("demo", bench/sample)
// into a DuckDB store, runs every built-in detector over it the way
// 'trainscope serve' does, and serves it over Flight SQL, for the plugin's
// tests. It needs cgo and the duckdb_arrow build tag; the plugin binary
// never imports it.
package demostore
