// Package dcgm reads saved dcgm-exporter scrapes: Prometheus text
// exposition (*.prom) with DCGM_FI_DEV_* clocks, power, temperature and XID
// fields and the DCGM_FI_PROF_* profiling fields, every sample with its
// labels (gpu, UUID, Hostname, modelName, pod ...).
//
// Parsing is the Prometheus project's own (github.com/prometheus/common
// expfmt). A saved file often holds several scrapes one after another (a
// test's output, `curl` in a loop); a family declared again starts the next
// scrape, so each scrape parses on its own and keeps its order. Errors name
// the file and its line. Samples without a timestamp (dcgm-exporter writes
// none) carry 0: the caller places a scrape in time.
//
// ingest.Load takes *.prom files placed with the traces into the counters
// table (host from the Hostname label, device from gpu). Other labels
// (UUID, modelName, pod, err_msg) are read here but not stored yet, and no
// detector reads the counters yet.
package dcgm
