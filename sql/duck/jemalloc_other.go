//go:build !(linux && amd64) || duckdb_use_lib || duckdb_use_static_lib

package duck

// releaseFreed does nothing where DuckDB is not built with its jemalloc
// (see jemalloc.go).
func releaseFreed() {}

// allocatorRetained cannot tell where DuckDB is not built with its
// jemalloc.
func allocatorRetained() (bytes int64, ok bool) { return 0, false }
