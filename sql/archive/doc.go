// Package archive keeps the fleet archive: every analysed run's tables and
// findings as Parquet, in the hive layout distributed engines read
// (<dir>/<table>/day=YYYY-MM-DD/run=<run token>/data_0.parquet; slices as
// slices_core and slices_detail, which UNION ALL BY NAME joins; the token
// is stream.RunPathToken's: the run id with every byte but letters,
// digits, '-' and '_' escaped as Hive escapes partition values, %XX, so
// that no two runs share a folder; the run_id column in the files is the
// id itself), and
// attaches such an archive to a DuckDB store as views, which is how the
// query node ('trainscope serve --query-only') answers Flight SQL over every
// ingestor's runs.
//
// Files are written beside their final name and renamed into place, so a
// reader never sees half a file; analysing a run again replaces its files.
// Only types Trino, Spark and Hive read are written: every column of the
// exported tables is a signed integer, double, boolean, string or a list of
// those (TestArchiveTypesAreCommon checks each file's Parquet schema).
package archive
