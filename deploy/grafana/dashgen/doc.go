// Command dashgen writes the trainscope Grafana dashboards
// (deploy/grafana/dashboards/*.json) from Go code built with the Grafana
// Foundation SDK (github.com/grafana/grafana-foundation-sdk/go):
//
//	go run ./deploy/grafana/dashgen -out deploy/grafana/dashboards
//
// or `make dashboards`. The JSON files are what Grafana provisions and what
// the plugin's end-to-end tests (grafana-plugin/e2e/provisioning_test.go)
// run against the demo store, so they are committed; edit the Go code and
// regenerate rather than edit them by hand. TestCommittedDashboards fails
// when the two disagree.
//
// One file per dashboard (fleet.go, run.go, findings.go); query.go holds
// the query model of our data source plugin, which the SDK has no builder
// for, as a variants.Dataquery; helpers.go the pieces the dashboards share.
package main
