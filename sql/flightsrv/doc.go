// Package flightsrv serves a trainscope DuckDB store over Arrow Flight SQL,
// read-only, and is the client 'trainscope sql --server ADDR' uses.
//
// # The read-only contract
//
// One process owns a database for writing (the ingestor's duck.Store);
// everyone else reads through this endpoint. A query runs only if it is
// exactly one statement that reads the database and nothing else:
//
//   - allowed: SELECT, WITH ... SELECT, FROM-first queries, VALUES, TABLE,
//     DESCRIBE, SHOW, SUMMARIZE, and EXPLAIN [ANALYZE] of any of these;
//   - refused: statements that write or change state (INSERT, UPDATE,
//     DELETE, CREATE, DROP, ALTER, ATTACH, DETACH, INSTALL, LOAD, COPY,
//     EXPORT, IMPORT, PRAGMA, SET, RESET, CALL, CHECKPOINT, transactions),
//     several statements at once, table functions that read files, URLs or
//     other databases or run SQL built at run time (read_csv, read_parquet,
//     glob, query, ...), table names DuckDB would read as a file or URL
//     (FROM 'x.csv', FROM '/etc/passwd'), getenv, nextval, and the
//     credential functions.
//
// CheckReadOnly decides. DuckDB's own parser reads the query
// (json_serialize_sql, which serializes SELECT statements only, run on a
// separate in-memory database so nothing executes on the store), and the
// checker walks the syntax tree: every table must be a plain name, every
// table function must be on an allow list (generators, the duckdb_* and
// pragma_* catalog functions, our schema's table macros with table names
// as arguments), no function may be on the deny list, and every function
// and type must be built in (an unknown one would make DuckDB download
// and load an extension, which this build does on its own). A token-level
// pass over the same text names refused statements in errors and refuses
// on its own when it sees a denied function call. Before running, DuckDB
// prepares the query on the query's connection and must classify it as a
// SELECT or EXPLAIN. Refusals are gRPC PermissionDenied with the reason;
// DuckDB's errors about a query are InvalidArgument.
//
// # Serving
//
// Serve listens on an address and answers ad-hoc statements (Grafana's
// Flight SQL data source), prepared statements without parameters (ADBC,
// JDBC), and the catalog calls generic clients browse with (catalogs,
// schemas, tables with their Arrow schemas, table types, SqlInfo). Every
// query runs on its own duck.Reader, a separate connection on the store's
// database, so readers never wait for the writer or each other; each sees
// the rows committed when it started. Results are DuckDB's Arrow records,
// unchanged (timestamps keep DuckDB's units and time zones). Tickets and
// prepared-statement handles carry the query text and are checked again
// when used, so the server keeps no per-client state.
//
// # Limits and credentials
//
// Options bound each query and can require a bearer token on every call
// (gRPC metadata
// "authorization: Bearer <token>", what ADBC, JDBC and Grafana send) and
// TLS, with client certificates for mTLS. The zero Options serve anyone
// without limits: fine on loopback in a test, never on a network ('serve'
// refuses that without credentials). Dialer is the client side: token,
// TLS files, and Stream, which hands batches over as they arrive.
//
// The bounds: DuckDB streams each result (duck.Reader.Stream), computing
// rows as they are sent, a small buffer ahead. The time limit covers a
// query from planning (when the client asks for it, and again before it
// runs) to its last batch; at the limit DuckDB is interrupted, between
// steps of planning or chunks of execution (one expression's evaluation,
// such as a constant folded while planning, runs to its end first), and
// the client gets DeadlineExceeded naming the limit. The row limit sends
// that many rows, then ResourceExhausted, and the query stops there: the
// rest is never built. Memory is DuckDB's memory_limit, for the whole
// database: sorts, joins and aggregates spill to disk under it or fail
// with ResourceExhausted; what DuckDB allocates outside its buffer manager
// (a single huge string value, say) only the time limit bounds.
//
// Lockdown has DuckDB itself refuse files outside the database's own
// folders, extensions and (on a database no writer shares) every setting
// change, so that a query that got past the checks above still cannot
// read the machine's files or lift a limit.
package flightsrv
