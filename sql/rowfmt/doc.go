// Package rowfmt prints query results as a table, CSV or JSON while they
// arrive, so that a result of 100M rows is never held: rows scanned by
// database/sql, or Arrow record batches from Flight SQL converted cell by
// cell (ArrowValue) to the same Go values database/sql would give.
package rowfmt
