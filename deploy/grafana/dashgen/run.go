package main

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// runSQL is a query scoped to the chosen run and ranks, what $__run and
// $__ranks in its SQL expand to.
func runSQL(sql string) *QueryBuilder {
	return sqlQuery(sql).Run("$run").Ranks("${rank:csv}")
}

// gpuSeries is one hardware counter of the run's GPUs, one series per GPU;
// samples not placed on a rank (rank NULL) are kept whatever ranks are
// chosen.
func gpuSeries(metric, agg string) *QueryBuilder {
	return runSQL(fmt.Sprintf(`
SELECT $__timeGroup(ts, $__interval) AS time,
       printf('rank %%s (%%s gpu %%s)', coalesce(rank::VARCHAR, '?'), host, coalesce(device::VARCHAR, '?')) AS gpu,
       %s(value) AS value
FROM gpu_samples
WHERE run_id = $__run AND metric = '%s' AND $__timeFilter(ts) AND (rank IS NULL OR rank IN $__ranks)
GROUP BY ALL
ORDER BY time`, agg, metric)).TimeSeries()
}

const hardwareDescription = "Hardware counters of the run's GPUs (the agent's NVML sampler, dcgm-exporter scrapes placed with the traces, Nsight GPU metrics), one series per GPU; empty when the run has none. Throttling findings are annotations."

// runDashboard: one run, from its headline root causes down to kernels,
// operators, collectives and GPU counters.
func runDashboard() *dashboard.DashboardBuilder {
	d := newDashboard("trainscope-run", "trainscope / run",
		"One run: step times, GPU time breakdown, communication, stragglers, kernels, findings, GPU counters.").
		WithVariable(resourceVar("run", "Run", "runs", "", false)).
		WithVariable(resourceVar("host", "Host", "hosts", "$run", true)).
		WithVariable(resourceVar("rank", "Rank", "ranks", "$run", true)).
		WithVariable(resourceVar("detector", "Detector", "detectors", "$run", true)).
		Annotation(hardwareAnnotations())
	return withPanels(d,
		statPanel("World size").Span(4).Height(4).
			WithTarget(runSQL(`SELECT world_size FROM runs WHERE run_id = $__run`)),
		statPanel("Median step time").Span(5).Height(4).
			WithTarget(runSQL(`SELECT median(end_ns - start_ns) / 1e6 AS step_ms FROM steps WHERE run_id = $__run AND rank IN $__ranks`)).
			Unit("ms"),
		statPanel("Worst exposed communication").Span(5).Height(4).
			WithTarget(runSQL(`SELECT max(value) AS exposed_comm_pct FROM metrics WHERE run_id = $__run AND detector = 'comm_comp_overlap' AND metric = 'exposed_comm_pct' AND rank IN $__ranks`)).
			Unit("percent").Decimals(1),
		statPanel("Mean GPU idle").Span(5).Height(4).
			WithTarget(runSQL(`SELECT avg(value) AS gpu_idle_pct FROM metrics WHERE run_id = $__run AND detector = 'temporal_breakdown' AND metric = 'idle_pct' AND rank IN $__ranks`)).
			Unit("percent").Decimals(1),
		statPanel("Straggler what-if saving").Span(5).Height(4).
			Description("Time every step would save if the slowest rank ran at the median rank's pace.").
			WithTarget(runSQL(`SELECT max(value) AS saving_pct FROM metrics WHERE run_id = $__run AND detector = 'straggler_whatif' AND metric = 'whatif_saving_pct'`)).
			Unit("percent").Decimals(1),

		tablePanel("Root causes (the report's headline first)").Span(24).Height(6).
			Description("What the report leads with: each root cause of lost step time (a late rank and why, a one-off stall, a slow host or link, a hang), its cost a step from the critical path through the collectives, and one fix. Empty when no rank holds the others up by 5% of a step.").
			WithTarget(runSQL(`
SELECT position, kind, why, rank, host, step,
       cost_ns_per_step / 1e6 AS cost_ms_per_step, cost_pct, headline, fix
FROM root_causes
WHERE run_id = $__run
ORDER BY position`)),

		timeseriesPanel("Step time per rank").Span(12).Height(8).
			Description("One point per ProfilerStep at its start; open the run from the fleet dashboard to get its time range.").
			WithTarget(runSQL(`
SELECT make_timestamp_ns(start_ns) AS time, rank, (end_ns - start_ns) / 1e6 AS step_ms
FROM steps
WHERE run_id = $__run AND rank IN $__ranks
ORDER BY time`).TimeSeries()).
			Unit("ms").DrawStyle(common.GraphDrawStylePoints).PointSize(8),
		barchartPanel("GPU time breakdown per rank").Span(12).Height(8).
			WithTarget(runSQL(`
SELECT rank::VARCHAR AS rank,
       max(value) FILTER (WHERE metric = 'compute_pct') AS compute_pct,
       max(value) FILTER (WHERE metric = 'non_compute_pct') AS non_compute_pct,
       max(value) FILTER (WHERE metric = 'idle_pct') AS idle_pct
FROM metrics
WHERE run_id = $__run AND detector = 'temporal_breakdown' AND rank IN $__ranks
GROUP BY rank
ORDER BY rank::INTEGER`)).
			Unit("percent").Decimals(1).Stacking(common.StackingModeNormal),

		barchartPanel("Communication per rank").Span(12).Height(8).
			WithTarget(runSQL(`
SELECT rank::VARCHAR AS rank,
       max(value) FILTER (WHERE metric = 'exposed_comm_pct') AS exposed_comm_pct,
       max(value) FILTER (WHERE metric = 'overlap_pct') AS overlap_pct
FROM metrics
WHERE run_id = $__run AND detector = 'comm_comp_overlap' AND rank IN $__ranks
GROUP BY rank
ORDER BY rank::INTEGER`)).
			Unit("percent").Decimals(1),
		tablePanel("Stragglers: who arrives last at collectives").Span(12).Height(8).
			WithTarget(runSQL(`
SELECT m.rank, r.host,
       max(m.value) FILTER (WHERE m.metric = 'times_last') AS times_last,
       max(m.value) FILTER (WHERE m.metric = 'instances') AS collectives,
       max(m.value) FILTER (WHERE m.metric = 'last_pct') AS last_pct,
       max(m.value) FILTER (WHERE m.metric = 'block_ns') / 1e6 AS held_job_up_ms,
       max(m.value) FILTER (WHERE m.metric = 'wait_caused_ns') / 1e6 AS peers_waited_ms
FROM metrics m LEFT JOIN ranks r ON r.run_id = m.run_id AND r.rank = m.rank
WHERE m.run_id = $__run AND m.detector = 'straggler' AND m.rank IN $__ranks
GROUP BY ALL
ORDER BY last_pct DESC, m.rank`)),

		tablePanel("Top kernels").Span(12).Height(8).
			WithTarget(runSQL(`
SELECT subject AS kernel,
       max(value) FILTER (WHERE metric = 'sum_ns') / 1e6 AS total_ms,
       max(value) FILTER (WHERE metric = 'count') AS launches,
       max(value) FILTER (WHERE metric = 'mean_ns') / 1e3 AS mean_us,
       max(value) FILTER (WHERE metric = 'class_pct') AS class_pct
FROM metrics
WHERE run_id = $__run AND detector = 'top_kernels'
GROUP BY subject
ORDER BY total_ms DESC`)),
		tablePanel("Operators by time saved at their roofline").Span(12).Height(8).
			Description("roofline_shapes: unique operator calls (their recorded input shapes and dtype) ranked by the GPU time their kernels would give back at the roofline of this GPU: the least time at the dtype's dense peak or at HBM bandwidth. Needs record_shapes=True and a GPU the catalog knows.").
			WithTarget(runSQL(`
SELECT subject AS "operator, shapes, dtype, bound",
       max(value) FILTER (WHERE metric = 'saved_ns') / 1e6 AS saved_ms,
       max(value) FILTER (WHERE metric = 'time_ns') / 1e6 AS gpu_ms,
       max(value) FILTER (WHERE metric = 'roof_pct') AS roof_pct,
       max(value) FILTER (WHERE metric = 'achieved_tflops') AS tflops,
       max(value) FILTER (WHERE metric = 'achieved_tbs') AS tbs,
       max(value) FILTER (WHERE metric = 'intensity') AS flop_per_byte,
       max(value) FILTER (WHERE metric = 'calls') AS calls
FROM metrics
WHERE run_id = $__run AND detector = 'roofline_shapes'
GROUP BY subject
ORDER BY saved_ms DESC`)),

		tablePanel("Communication by group, collective and transport").Span(12).Height(8).
			Description("comm_groups: per process group and collective (NCCL algorithm/protocol from the kernel name; transport inferred from where the group's ranks run), summed over the chosen ranks.").
			WithTarget(runSQL(`
SELECT subject AS "group collective algo/proto via transport",
       count(DISTINCT rank) AS ranks,
       sum(value) FILTER (WHERE metric = 'gpu_ns') / 1e6 AS gpu_ms,
       sum(value) FILTER (WHERE metric = 'exposed_ns') / 1e6 AS exposed_ms,
       max(value) FILTER (WHERE metric = 'bottleneck_pct') AS worst_bottleneck_pct,
       median(value) FILTER (WHERE metric = 'busbw_gbps') AS median_busbw_gbps,
       min(value) FILTER (WHERE metric = 'busbw_p10_gbps') AS worst_p10_busbw_gbps
FROM metrics
WHERE run_id = $__run AND detector = 'comm_groups' AND rank IN $__ranks
GROUP BY subject
ORDER BY exposed_ms DESC`)),
		tablePanel("Python call stacks keeping the GPU idle").Span(12).Height(8).
			Description("host_exposed: call stacks (last frames) whose own time ran while the GPU had nothing to do; exposed_pct is of the rank's GPU span.").
			WithTarget(runSQL(`
SELECT subject AS stack,
       count(DISTINCT rank) AS ranks,
       sum(value) FILTER (WHERE metric = 'exposed_self_ns') / 1e6 AS exposed_ms,
       max(value) FILTER (WHERE metric = 'exposed_pct') AS worst_exposed_pct,
       sum(value) FILTER (WHERE metric = 'calls') AS calls
FROM metrics
WHERE run_id = $__run AND detector = 'host_exposed' AND rank IN $__ranks
GROUP BY subject
ORDER BY exposed_ms DESC
LIMIT 20`)),

		tablePanel("Findings").Span(24).Height(10).
			Description("The findings builder: every finding of the run for the chosen ranks and detectors, worst first.").
			WithTarget(findingsQuery().Run("$run").Ranks("${rank:csv}").Detector("${detector:csv}")),

		timeseriesPanel("SM clock per GPU").Span(12).Height(8).
			Description(hardwareDescription).
			WithTarget(gpuSeries("sm_clock_mhz", "avg")).
			Unit("MHz"),
		timeseriesPanel("Power per GPU").Span(12).Height(8).
			Description(hardwareDescription).
			WithTarget(gpuSeries("power_w", "avg")).
			Unit("watt"),

		timeseriesPanel("Temperature per GPU").Span(12).Height(8).
			Description(hardwareDescription).
			WithTarget(gpuSeries("temp_c", "max")).
			Unit("celsius"),
		// 236 = SW power cap | HW slowdown | SW thermal | HW thermal | HW
		// power brake: the reasons that slow the clock, not idle or app
		// clock settings
		timeseriesPanel("Clock throttle reasons per GPU").Span(12).Height(8).
			Description("1 while the GPU reports a slowing clock event reason (SW power cap, HW slowdown, SW or HW thermal slowdown, HW power brake); clock_reasons_text(bits) in SQL names them.").
			WithTarget(runSQL(`
SELECT $__timeGroup(ts, $__interval) AS time,
       printf('rank %s (%s gpu %s)', coalesce(rank::VARCHAR, '?'), host, coalesce(device::VARCHAR, '?')) AS gpu,
       max(((value::UBIGINT & 236) <> 0)::INTEGER) AS throttled
FROM gpu_samples
WHERE run_id = $__run AND metric = 'clock_reasons' AND $__timeFilter(ts) AND (rank IS NULL OR rank IN $__ranks)
GROUP BY ALL
ORDER BY time`).TimeSeries()).
			Min(0).Max(1).DrawStyle(common.GraphDrawStyleLine).LineInterpolation(common.LineInterpolationStepAfter),

		tablePanel("GPU counters per rank").Span(24).Height(8).
			Description("gpu_counters over the analysed steps: median SM clock and its drop against the run's median, share of samples throttled and why, power, temperature, framebuffer, last XID.").
			WithTarget(runSQL(`
SELECT rank, subject AS gpu, sm_clock_mhz, 100 * clock_drop AS clock_drop_pct, 100 * throttle_share AS throttled_pct,
       clock_reasons_text(throttle_reasons) AS reasons, power_w, power_limit_w, temp_max_c,
       100 * fb_used_frac AS fb_used_pct, xid AS last_xid
FROM gpu_counters_wide
WHERE run_id = $__run AND rank IN $__ranks
ORDER BY clock_drop_pct DESC, rank`)),
	)
}

// hardwareAnnotations puts GPU hardware findings on the time axis: at the
// first step of the rank whose counters show the fault (a throttled
// sample, else its first step); a finding on several GPUs (a cap across
// the job, NVLink unused on a host) at the first such step of any rank.
// Its toggle stays on the dashboard's bar: the SDK's default placement
// would move it into the controls menu.
func hardwareAnnotations() cog.Builder[dashboard.AnnotationQuery] {
	b := dashboard.NewAnnotationQueryBuilder().
		Name("GPU hardware findings").
		Enable(true).
		IconColor("red").
		Datasource(trainscopeDS()).
		Target(runSQL(`
SELECT make_timestamp_ns(coalesce(min(rs.start_ns) FILTER (WHERE rs.throttle_share > 0), min(rs.start_ns))) AS time,
       f.detector || coalesce(' on rank ' || f.rank, ' on ' || f.subject, '') || ': ' || f.message AS text,
       f.severity AS tags
FROM findings f
JOIN rank_steps rs ON rs.run_id = f.run_id AND (rs.rank = f.rank OR f.rank IS NULL)
WHERE f.run_id = $__run AND f.detector IN ('gpu_throttle', 'gpu_clock_cap', 'gpu_xid', 'gpu_mem_full', 'gpu_link')
GROUP BY f.detector, f.rank, f.subject, f.message, f.severity`))
	return amend[dashboard.AnnotationQuery](b, func(a *dashboard.AnnotationQuery) { a.Placement = nil })
}
