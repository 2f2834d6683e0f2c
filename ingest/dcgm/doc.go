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
// Not yet wired into ingest.Load or the counters table (the hardware
// counters issue, item 2's first step).
package dcgm
