// Package e2e tests the plugin the way Grafana runs it: it builds the real
// backend binary, starts it with hashicorp/go-plugin (protocol 2, the
// datasource magic cookie, gRPC), and calls QueryData, CheckHealth and
// CallResource through the SDK's gRPC clients against a real Flight SQL
// server (sql/flightsrv) over a DuckDB store loaded with the demo run and
// analyzed by every built-in detector (demostore_test.go). It also runs
// every provisioned dashboard query, template variable and alert rule in
// deploy/grafana against that data. Only its test files load the product
// (readers, detectors, DuckDB), so the plugin module builds without cgo;
// the tests need cgo and the duckdb_arrow build tag:
//
//	cd grafana-plugin && go test -tags duckdb_arrow ./e2e
package e2e
