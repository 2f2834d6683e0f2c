// Package duck owns trainscope's DuckDB connections: it opens a database
// file (or an in-memory one), applies the embedded schema, inserts Arrow
// record batches through DuckDB's Arrow scan, and exports tables to
// hive-partitioned Parquet.
//
// Ownership: exactly one Store may write a database file, and a Store's own
// statements run on exactly one connection, so they are serialised; its
// owner (the ingestor, with the detector scheduler) takes turns on it.
// A staged store (Options.Staged: serve's) keeps StagedTables as Parquet
// files beside the database, recorded in staged_files by whoever writes
// them (the ingestor, in the transaction of their batches); each is a
// view of its name over <name>_rows and the files. Opening it settles what
// a crash left: recorded .tmp files are renamed into view, others removed.
// Readers (NewReader) are further connections on the same database for
// queries that run beside the writer (Flight SQL); DuckDB's MVCC gives each
// a consistent view, and on a staged store no merge swaps files while one
// is open (ExcludeReaders). Insert does not keep the record it is given; the
// caller still owns it.
package duck
