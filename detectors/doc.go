// Package detectors runs trainscope's diagnoses. A detector is one .sql
// file whose header, in SQL comments, states its name, category, kind
// (metric or finding), default severity, description and thresholds; the
// thresholds are bound parameters ($name), never formatted into the SQL.
// Where a detector stands in the report is in its header too: order places
// a metric's table; cause, shows, symptom and evidence place a finding
// detector in the cause graph (the root cause its findings make, the
// causes they show on a cause's rank, the symptom a cause explains, the
// kinds of cause its findings are evidence for). README.md's header keys
// list the values.
//
// The loader is strict: unknown header keys, a name that differs from the
// file name, thresholds declared but unused or used but undeclared are
// errors that give file:line. Built-in detectors are embedded from sql/;
// users add folders of their own and override thresholds through config.
//
// Metric detectors measure: each output row is keyed by run_id and
// optionally rank, step_lo, step_hi and subject, and every other column is
// a number or text naming what was measured. The runner stores the rows in
// the detector's own table, metric_<name> (its columns, numbers as DOUBLE,
// documented with COMMENT ON from the header), which finding detectors
// read by column (FROM metric_<name>: the rule tests and the catalogue
// find the dependency there), and in the metrics table, one row per
// number, for dashboards, the archive and SQL clients. Finding detectors judge: each row needs run_id, metric, value and
// message, and may carry rank, host, step_lo, step_hi, subject, threshold,
// severity, fix and evidence (JSON); the runner stores them in findings.
//
// BuildReport turns the results of one run of the detectors into the
// report model (package report): it reads the findings, the metric tables
// and what the cause graph is judged from, has package causes judge the
// root causes and the verdict (headline, the lines under it, the limiter)
// under the CausesConfig of the Set that ran them (the config's causes
// section), and gathers the chart data. Report's WriteMarkdown and
// WriteJSON render it, deterministically for the same database. The other
// subpackages render and compare: report/html the HTML page and its
// charts, perfetto the trace export, diff two runs against each other,
// mdfmt the units and tables they all write; live and httpapi serve
// reports of runs as they stream in.
package detectors
