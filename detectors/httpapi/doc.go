// Package httpapi is the always-on server's HTTP API: / (an index),
// /healthz (JSON, 503 when ingest is unwell), /metrics (Prometheus, with
// Go runtime and process metrics), /runs (the runs with reports) and
// /runs/{id}/report in markdown, .json and .html.
//
// It serves what it is given: reports from a Reports (the detector
// scheduler, detectors/live), health from a function (ingest.Monitor's),
// metrics from collectors. It opens no database and knows no NATS, so
// tests drive it with httptest and fakes. RequireToken guards every path
// but /healthz with a bearer token.
package httpapi
