// Package plugin is the backend of the trainscope Grafana data source
// (id trainscope-trainscope-datasource). It reads trainscope's store over
// Arrow Flight SQL — the read-only endpoint 'trainscope serve --flight'
// opens — and answers Grafana's three calls:
//
//   - QueryData: raw SQL with macros (package macros) or the findings
//     builder, formatted as a table or as time series. Arrow columns become
//     frame fields with nanosecond times and plain numeric types (DuckDB's
//     DECIMAL, DATE, dictionary and list columns are converted first, since
//     the SDK's FromArrowRecord rejects them). Every query has its own
//     error, a timeout and a row limit; a cancelled request cancels the
//     Flight SQL stream.
//   - CheckHealth: says exactly what is wrong: no address, server
//     unreachable, TLS mismatch, authentication refused, or a store whose
//     schema lacks tables or columns this plugin reads.
//   - CallResource: GET runs, hosts, ranks, detectors, categories and
//     severities as [{"text","value"}] for template variables and the
//     query editor.
//
// Settings: jsonData.address (host:port, grpc://, grpc+tls://), tls,
// tlsSkipVerify, tlsServerName, timeoutSeconds, rowLimit; secureJsonData
// token (sent as "authorization: Bearer <token>") and tlsCACert (PEM).
//
// Alerting: time series frames carry their string columns (and integer
// rank/device columns) as labels; a table with one numeric column and
// string columns is what Grafana's alerting reads as one number per label
// set.
package plugin
