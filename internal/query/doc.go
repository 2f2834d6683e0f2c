// Package query runs one SQL query for 'trainscope sql': on a database
// that 'analyze --db' wrote, opened read-only, or on a running serve's
// Flight SQL endpoint (with its token and TLS), printing the rows as they
// arrive as a table, CSV or JSON.
//
// It lives under internal/: it is the binary's own wiring.
package query
