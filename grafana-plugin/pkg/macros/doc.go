// Package macros expands the trainscope data source's query macros into
// DuckDB SQL. trainscope stores times as BIGINT nanoseconds since the Unix
// epoch, so the time macros take such columns and compare integers; the
// SDK's own $__timeGroup emits SQL Server syntax that DuckDB rejects, which
// is why this package exists instead of data/sqlutil's defaults.
//
//	$__timeFilter(col)            col BETWEEN <from ns> AND <to ns>
//	$__timeFrom()  / $__timeFrom  <from ns> (a BIGINT literal)
//	$__timeTo()    / $__timeTo    <to ns>
//	$__interval                   the panel interval as a DuckDB INTERVAL
//	$__interval_ns                the panel interval in ns (BIGINT)
//	$__timeGroup(col, interval)   time_bucket(interval, make_timestamp_ns(col)),
//	                              a TIMESTAMP_NS; interval is $__interval or
//	                              a duration such as 10s, 5m, '1h', 250ms
//	$__run                        the query's run as a quoted string literal
//	$__ranks                      the query's ranks as a parenthesised list,
//	                              for "rank IN $__ranks"; all ranks when none
//	                              are chosen
//
// Expansion is textual and runs before the query reaches the server,
// which still applies its read-only check to the result.
package macros
