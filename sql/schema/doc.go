// Package schema holds trainscope's DuckDB schema as embedded .sql files:
// the tables (one file per table family), the views detectors share, and
// the reusable macros (interval union, exposed time, robust z-score).
//
// Files are applied in name order; every statement is idempotent
// (CREATE ... IF NOT EXISTS / CREATE OR REPLACE) so that opening an existing
// database upgrades nothing silently and breaks nothing.
package schema
