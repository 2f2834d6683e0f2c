package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// runsInRange keeps the rows of runs that started in the dashboard's time
// range: findings and metrics carry no time of their own.
const runsInRange = "run_id IN (SELECT run_id FROM runs WHERE $__timeFilter(start_ns))"

// fleetDashboard: every run in the time range, a click away from its
// drill-down.
func fleetDashboard() *dashboard.DashboardBuilder {
	d := newDashboard("trainscope-fleet", "trainscope / fleet",
		"Every run in the time range: findings, bottlenecks, memory waste, ingestion.")
	return withPanels(d,
		statPanel("Runs started in range").Span(6).Height(4).
			WithTarget(sqlQuery(`SELECT count(*) AS runs FROM runs WHERE $__timeFilter(start_ns)`)),
		statPanel("Critical findings").Span(6).Height(4).
			WithTarget(sqlQuery(`SELECT count(*) AS critical FROM findings WHERE severity = 'critical' AND `+runsInRange)).
			ColorScheme(thresholdColors()).Thresholds(countAlarm("red")),
		statPanel("Warnings").Span(6).Height(4).
			WithTarget(sqlQuery(`SELECT count(*) AS warnings FROM findings WHERE severity = 'warn' AND `+runsInRange)).
			ColorScheme(thresholdColors()).Thresholds(countAlarm("orange")),
		statPanel("Ranks in range").Span(6).Height(4).
			WithTarget(sqlQuery(`SELECT count(*) AS ranks FROM ranks WHERE `+runsInRange)),

		tablePanel("Runs").Span(24).Height(9).
			Description("Every run that started in the time range; click a run to open it.").
			WithTarget(sqlQuery(`
SELECT r.run_id, r.model, r.world_size, r.gpu_type,
       make_timestamp_ns(r.start_ns) AS started,
       (r.end_ns - r.start_ns) / 1e9 AS traced_s,
       b.subject AS bottleneck,
       count(f.detector) FILTER (WHERE f.severity = 'critical') AS critical,
       count(f.detector) FILTER (WHERE f.severity = 'warn') AS warn,
       (SELECT max(value) FROM metrics m WHERE m.run_id = r.run_id AND m.detector = 'comm_comp_overlap' AND m.metric = 'exposed_comm_pct') AS max_exposed_comm_pct,
       (SELECT avg(value) FROM metrics m WHERE m.run_id = r.run_id AND m.detector = 'temporal_breakdown' AND m.metric = 'idle_pct') AS mean_gpu_idle_pct,
       r.start_ns // 1000000 AS from_ms, r.end_ns // 1000000 + 1 AS to_ms
FROM runs r
LEFT JOIN findings f ON f.run_id = r.run_id AND f.detector <> 'bottleneck_class'
LEFT JOIN findings b ON b.run_id = r.run_id AND b.detector = 'bottleneck_class'
WHERE $__timeFilter(r.start_ns)
GROUP BY ALL
ORDER BY started DESC`)).
			// from_ms and to_ms only feed the link: the run's own time
			// range, so its drill-down opens on its steps
			DataLinks([]cog.Builder[dashboard.DashboardLink]{
				dataLink("Open run", "/d/trainscope-run/trainscope-run?var-run=${__data.fields.run_id}&from=${__data.fields.from_ms}&to=${__data.fields.to_ms}"),
			}).
			OverrideByName("from_ms", hidden()).
			OverrideByName("to_ms", hidden()).
			ShowHeader(true),

		timeseriesPanel("Findings by severity (by run start)").Span(12).Height(8).
			WithTarget(sqlQuery(`
SELECT $__timeGroup(r.start_ns, $__interval) AS time, f.severity, count(*)::DOUBLE AS findings
FROM findings f JOIN runs r USING (run_id)
WHERE $__timeFilter(r.start_ns)
GROUP BY ALL
ORDER BY time`).TimeSeries()).
			DrawStyle(common.GraphDrawStyleBars),
		barchartPanel("Worst exposed communication and GPU idle per run").Span(12).Height(8).
			WithTarget(sqlQuery(`
SELECT run_id,
       max(value) FILTER (WHERE detector = 'comm_comp_overlap' AND metric = 'exposed_comm_pct') AS exposed_comm_pct,
       avg(value) FILTER (WHERE detector = 'temporal_breakdown' AND metric = 'idle_pct') AS gpu_idle_pct
FROM metrics
WHERE `+runsInRange+`
GROUP BY run_id
ORDER BY run_id`)).
			Unit("percent").Decimals(1),

		barchartPanel("GPU memory reserved but unused per run (GiB)").Span(12).Height(8).
			Description("From the mem_fleet detector: snapshots (reserved - allocated) and traces (unused at the step peak), summed over ranks.").
			WithTarget(sqlQuery(`
SELECT run_id, metric, value
FROM metrics
WHERE detector = 'mem_fleet' AND `+runsInRange+`
ORDER BY run_id, metric`)).
			Unit("decbytes"),
		timeseriesPanel("Detector passes").Span(12).Height(8).
			Description("One point per pass of the serve scheduler's detectors over a run.").
			WithTarget(sqlQuery(`
SELECT make_timestamp_ns(analyzed_ns) AS time, run_id, findings::DOUBLE AS findings, took_ms
FROM analyses
WHERE $__timeFilter(analyzed_ns)
ORDER BY time`).TimeSeries()),

		tablePanel("Nodes that keep being bad (their last 10 runs)").Span(24).Height(8).
			Description("Every GPU (host:device) and link (its GPUs) that ran in the time range, over its last 10 runs across jobs "+
				"(node_reputation): in how many it was slow, throttled, reported a GPU error or hung. The score is the 95% lower "+
				"bound of its share of bad runs, so one bad run scores low and a node bad in most of many runs high.").
			WithTarget(sqlQuery(`
SELECT entity, node, host, gpu_name, bad_runs, runs, slow_runs, throttled_runs, error_runs, hung_runs,
       median_slowdown, median_late_share, score, bad_run_ids, last_run_id
FROM node_reputation
WHERE $__timeFilter(last_run_ns)
ORDER BY score DESC, bad_runs DESC, entity, node`)).
			ShowHeader(true),
		tablePanel("Ingestion by run").Span(24).Height(7).
			WithTarget(sqlQuery(`
SELECT run_id, tbl AS table_name, count(*) AS batches, sum(rows) AS rows, sum(bytes) AS bytes,
       make_timestamp_ns(max(ingested_ns)) AS last_ingested
FROM ingested_batches
WHERE $__timeFilter(ingested_ns)
GROUP BY ALL
ORDER BY last_ingested DESC`)),
	)
}

func hidden() []dashboard.DynamicConfigValue {
	return []dashboard.DynamicConfigValue{{Id: "custom.hidden", Value: true}}
}
