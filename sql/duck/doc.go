// Package duck owns trainscope's DuckDB connections: it opens a database
// file (or an in-memory one), applies the embedded schema, inserts Arrow
// record batches through DuckDB's Arrow scan, and exports tables to
// hive-partitioned Parquet.
//
// Ownership: exactly one Store may write a database file, and a Store uses
// exactly one connection, so every statement it runs is serialised. Insert
// does not keep the record it is given; the caller still owns it.
package duck
