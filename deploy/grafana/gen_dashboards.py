#!/usr/bin/env python3
"""Writes dashboards/*.json. The JSON files are what Grafana loads and what
the plugin's provisioning test runs; edit this script and re-run it
(python3 deploy/grafana/gen_dashboards.py) rather than the JSON by hand."""
import json, os

DS = {"type": "trainscope-trainscope-datasource", "uid": "trainscope"}
HERE = os.path.dirname(os.path.abspath(__file__))

def target(sql=None, fmt="table", ref="A", **kw):
    t = {"refId": ref, "datasource": DS, "queryType": "sql", "format": fmt}
    if sql is not None:
        t["rawSql"] = sql.strip()
    t.update(kw)
    return t

class Board:
    def __init__(self):
        self.panels, self.x, self.y, self.rowh = [], 0, 0, 0
    def add(self, typ, title, targets, w=12, h=8, desc="", field=None, options=None):
        if self.x + w > 24:
            self.x, self.y, self.rowh = 0, self.y + self.rowh, 0
        p = {"id": len(self.panels) + 1, "type": typ, "title": title, "description": desc,
             "datasource": DS, "gridPos": {"x": self.x, "y": self.y, "w": w, "h": h},
             "targets": targets if isinstance(targets, list) else [targets],
             "fieldConfig": {"defaults": field or {}, "overrides": []}, "options": options or {}}
        self.panels.append(p)
        self.x += w
        self.rowh = max(self.rowh, h)
        return p

def var_query(name, label, resource, multi=False, include_all=False, run=None, hide=0):
    q = {"resource": resource}
    if run:
        q["run"] = run
    return {"type": "query", "name": name, "label": label, "datasource": DS, "query": q,
            "definition": resource, "refresh": 1, "multi": multi, "includeAll": include_all,
            "current": {}, "options": [], "hide": hide, "sort": 0}

def dashboard(uid, title, desc, board, variables, time_from="now-30d", links=None, annotations=None):
    return {"uid": uid, "title": title, "description": desc, "tags": ["trainscope"],
            "timezone": "utc", "schemaVersion": 39, "version": 1, "editable": True,
            "time": {"from": time_from, "to": "now"}, "refresh": "",
            "templating": {"list": variables}, "annotations": {"list": annotations or []},
            "links": links or [], "panels": board.panels}

def pct(unit="percent"):
    return {"unit": unit, "decimals": 1}

# ---------------------------------------------------------------- fleet
fleet = Board()
in_range = "run_id IN (SELECT run_id FROM runs WHERE $__timeFilter(start_ns))"
fleet.add("stat", "Runs started in range", target("SELECT count(*) AS runs FROM runs WHERE $__timeFilter(start_ns)"), w=6, h=4)
fleet.add("stat", "Critical findings", target(f"SELECT count(*) AS critical FROM findings WHERE severity = 'critical' AND {in_range}"), w=6, h=4,
          field={"color": {"mode": "thresholds"}, "thresholds": {"mode": "absolute", "steps": [{"color": "green", "value": None}, {"color": "red", "value": 1}]}})
fleet.add("stat", "Warnings", target(f"SELECT count(*) AS warnings FROM findings WHERE severity = 'warn' AND {in_range}"), w=6, h=4,
          field={"color": {"mode": "thresholds"}, "thresholds": {"mode": "absolute", "steps": [{"color": "green", "value": None}, {"color": "orange", "value": 1}]}})
fleet.add("stat", "Ranks in range", target("SELECT count(*) AS ranks FROM ranks WHERE run_id IN (SELECT run_id FROM runs WHERE $__timeFilter(start_ns))"), w=6, h=4)
fleet.add("table", "Runs", target(f"""
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
ORDER BY started DESC
"""), w=24, h=9, desc="Every run that started in the time range; click a run to open it.",
   field={"links": [{"title": "Open run", "url": "/d/trainscope-run/trainscope-run?var-run=${__data.fields.run_id}&from=${__data.fields.from_ms}&to=${__data.fields.to_ms}"}]},
   options={"showHeader": True})
fleet.panels[-1]["fieldConfig"]["overrides"] = [
    {"matcher": {"id": "byName", "options": n}, "properties": [{"id": "custom.hidden", "value": True}]} for n in ("from_ms", "to_ms")]
fleet.add("timeseries", "Findings by severity (by run start)", target(f"""
SELECT $__timeGroup(r.start_ns, $__interval) AS time, f.severity, count(*)::DOUBLE AS findings
FROM findings f JOIN runs r USING (run_id)
WHERE $__timeFilter(r.start_ns)
GROUP BY ALL
ORDER BY time
""", fmt="time_series"), w=12, h=8, field={"custom": {"drawStyle": "bars"}})
fleet.add("barchart", "Worst exposed communication and GPU idle per run", target(f"""
SELECT run_id,
       max(value) FILTER (WHERE detector = 'comm_comp_overlap' AND metric = 'exposed_comm_pct') AS exposed_comm_pct,
       avg(value) FILTER (WHERE detector = 'temporal_breakdown' AND metric = 'idle_pct') AS gpu_idle_pct
FROM metrics
WHERE {in_range}
GROUP BY run_id
ORDER BY run_id
"""), w=12, h=8, field=pct())
fleet.add("barchart", "GPU memory reserved but unused per run (GiB)", target(f"""
SELECT run_id, metric, value
FROM metrics
WHERE detector = 'mem_fleet' AND {in_range}
ORDER BY run_id, metric
"""), w=12, h=8, field={"unit": "decbytes"} , desc="From the mem_fleet detector: snapshots (reserved - allocated) and traces (unused at the step peak), summed over ranks.")
fleet.add("timeseries", "Detector passes", target("""
SELECT make_timestamp_ns(analyzed_ns) AS time, run_id, findings::DOUBLE AS findings, took_ms
FROM analyses
WHERE $__timeFilter(analyzed_ns)
ORDER BY time
""", fmt="time_series"), w=12, h=8, desc="One point per pass of the serve scheduler's detectors over a run.")
fleet.add("table", "Ingestion by run", target("""
SELECT run_id, tbl AS table_name, count(*) AS batches, sum(rows) AS rows, sum(bytes) AS bytes,
       make_timestamp_ns(max(ingested_ns)) AS last_ingested
FROM ingested_batches
WHERE $__timeFilter(ingested_ns)
GROUP BY ALL
ORDER BY last_ingested DESC
"""), w=24, h=7, field={})

# ---------------------------------------------------------------- run
run = Board()
runvars = [
    var_query("run", "Run", "runs"),
    var_query("host", "Host", "hosts", multi=True, include_all=True, run="$run"),
    var_query("rank", "Rank", "ranks", multi=True, include_all=True, run="$run"),
    var_query("detector", "Detector", "detectors", multi=True, include_all=True, run="$run"),
]
scoped = dict(run="$run", ranks="${rank:csv}")
def rt(sql, fmt="table", **kw):
    return target(sql, fmt=fmt, **dict(scoped, **kw))
run.add("stat", "World size", rt("SELECT world_size FROM runs WHERE run_id = $__run"), w=4, h=4)
run.add("stat", "Median step time", rt("SELECT median(end_ns - start_ns) / 1e6 AS step_ms FROM steps WHERE run_id = $__run AND rank IN $__ranks"), w=5, h=4, field={"unit": "ms"})
run.add("stat", "Worst exposed communication", rt("SELECT max(value) AS exposed_comm_pct FROM metrics WHERE run_id = $__run AND detector = 'comm_comp_overlap' AND metric = 'exposed_comm_pct' AND rank IN $__ranks"), w=5, h=4, field=pct())
run.add("stat", "Mean GPU idle", rt("SELECT avg(value) AS gpu_idle_pct FROM metrics WHERE run_id = $__run AND detector = 'temporal_breakdown' AND metric = 'idle_pct' AND rank IN $__ranks"), w=5, h=4, field=pct())
run.add("stat", "Straggler what-if saving", rt("SELECT max(value) AS saving_pct FROM metrics WHERE run_id = $__run AND detector = 'straggler_whatif' AND metric = 'whatif_saving_pct'"), w=5, h=4, field=pct(),
        desc="Time every step would save if the slowest rank ran at the median rank's pace.")
run.add("table", "Root causes (the report's headline first)", rt("""
SELECT position, kind, why, rank, host, step,
       cost_ns_per_step / 1e6 AS cost_ms_per_step, cost_pct, headline, fix
FROM root_causes
WHERE run_id = $__run
ORDER BY position
"""), w=24, h=6,
        desc="What the report leads with: each root cause of lost step time (a late rank and why, a one-off stall, a slow host or link, a hang), its cost a step from the critical path through the collectives, and one fix. Empty when no rank holds the others up by 5% of a step.")
run.add("timeseries", "Step time per rank", rt("""
SELECT make_timestamp_ns(start_ns) AS time, rank, (end_ns - start_ns) / 1e6 AS step_ms
FROM steps
WHERE run_id = $__run AND rank IN $__ranks
ORDER BY time
""", fmt="time_series"), w=12, h=8, field={"unit": "ms", "custom": {"drawStyle": "points", "pointSize": 8}},
        desc="One point per ProfilerStep at its start; open the run from the fleet dashboard to get its time range.")
run.add("barchart", "GPU time breakdown per rank", rt("""
SELECT rank::VARCHAR AS rank,
       max(value) FILTER (WHERE metric = 'compute_pct') AS compute_pct,
       max(value) FILTER (WHERE metric = 'non_compute_pct') AS non_compute_pct,
       max(value) FILTER (WHERE metric = 'idle_pct') AS idle_pct
FROM metrics
WHERE run_id = $__run AND detector = 'temporal_breakdown' AND rank IN $__ranks
GROUP BY rank
ORDER BY rank::INTEGER
"""), w=12, h=8, field=pct(), options={"stacking": "normal"})
run.add("barchart", "Communication per rank", rt("""
SELECT rank::VARCHAR AS rank,
       max(value) FILTER (WHERE metric = 'exposed_comm_pct') AS exposed_comm_pct,
       max(value) FILTER (WHERE metric = 'overlap_pct') AS overlap_pct
FROM metrics
WHERE run_id = $__run AND detector = 'comm_comp_overlap' AND rank IN $__ranks
GROUP BY rank
ORDER BY rank::INTEGER
"""), w=12, h=8, field=pct())
run.add("table", "Stragglers: who arrives last at collectives", rt("""
SELECT m.rank, r.host,
       max(m.value) FILTER (WHERE m.metric = 'times_last') AS times_last,
       max(m.value) FILTER (WHERE m.metric = 'instances') AS collectives,
       max(m.value) FILTER (WHERE m.metric = 'last_pct') AS last_pct,
       max(m.value) FILTER (WHERE m.metric = 'block_ns') / 1e6 AS held_job_up_ms,
       max(m.value) FILTER (WHERE m.metric = 'wait_caused_ns') / 1e6 AS peers_waited_ms
FROM metrics m LEFT JOIN ranks r ON r.run_id = m.run_id AND r.rank = m.rank
WHERE m.run_id = $__run AND m.detector = 'straggler' AND m.rank IN $__ranks
GROUP BY ALL
ORDER BY last_pct DESC, m.rank
"""), w=12, h=8)
run.add("table", "Top kernels", rt("""
SELECT subject AS kernel,
       max(value) FILTER (WHERE metric = 'sum_ns') / 1e6 AS total_ms,
       max(value) FILTER (WHERE metric = 'count') AS launches,
       max(value) FILTER (WHERE metric = 'mean_ns') / 1e3 AS mean_us,
       max(value) FILTER (WHERE metric = 'class_pct') AS class_pct
FROM metrics
WHERE run_id = $__run AND detector = 'top_kernels'
GROUP BY subject
ORDER BY total_ms DESC
"""), w=12, h=8)
run.add("table", "Operators by time saved at their roofline", rt("""
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
ORDER BY saved_ms DESC
"""), w=12, h=8, desc="roofline_shapes: unique operator calls (their recorded input shapes and dtype) ranked by the GPU time their kernels would give back at the roofline of this GPU: the least time at the dtype's dense peak or at HBM bandwidth. Needs record_shapes=True and a GPU the catalog knows.")
run.add("table", "Communication by group, collective and transport", rt("""
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
ORDER BY exposed_ms DESC
"""), w=12, h=8, desc="comm_groups: per process group and collective (NCCL algorithm/protocol from the kernel name; transport inferred from where the group's ranks run), summed over the chosen ranks.")
run.add("table", "Python call stacks keeping the GPU idle", rt("""
SELECT subject AS stack,
       count(DISTINCT rank) AS ranks,
       sum(value) FILTER (WHERE metric = 'exposed_self_ns') / 1e6 AS exposed_ms,
       max(value) FILTER (WHERE metric = 'exposed_pct') AS worst_exposed_pct,
       sum(value) FILTER (WHERE metric = 'calls') AS calls
FROM metrics
WHERE run_id = $__run AND detector = 'host_exposed' AND rank IN $__ranks
GROUP BY subject
ORDER BY exposed_ms DESC
LIMIT 20
"""), w=12, h=8, desc="host_exposed: call stacks (last frames) whose own time ran while the GPU had nothing to do; exposed_pct is of the rank's GPU span.")
run.add("table", "Findings", target(None, queryType="findings", run="$run", ranks="${rank:csv}", detector="${detector:csv}"), w=24, h=10,
        desc="The findings builder: every finding of the run for the chosen ranks and detectors, worst first.")
def gpu_series(metric, agg="avg"):
    return rt(f"""
SELECT $__timeGroup(ts, $__interval) AS time,
       printf('rank %s (%s gpu %s)', coalesce(rank::VARCHAR, '?'), host, coalesce(device::VARCHAR, '?')) AS gpu,
       {agg}(value) AS value
FROM gpu_samples
WHERE run_id = $__run AND metric = '{metric}' AND $__timeFilter(ts) AND (rank IS NULL OR rank IN $__ranks)
GROUP BY ALL
ORDER BY time
""", fmt="time_series")
hw = "Hardware counters of the run's GPUs (the agent's NVML sampler, dcgm-exporter scrapes placed with the traces, Nsight GPU metrics), one series per GPU; empty when the run has none. Throttling findings are annotations."
run.add("timeseries", "SM clock per GPU", gpu_series("sm_clock_mhz"), w=12, h=8, field={"unit": "MHz"}, desc=hw)
run.add("timeseries", "Power per GPU", gpu_series("power_w"), w=12, h=8, field={"unit": "watt"}, desc=hw)
run.add("timeseries", "Temperature per GPU", gpu_series("temp_c", "max"), w=12, h=8, field={"unit": "celsius"}, desc=hw)
run.add("timeseries", "Clock throttle reasons per GPU", rt("""
SELECT $__timeGroup(ts, $__interval) AS time,
       printf('rank %s (%s gpu %s)', coalesce(rank::VARCHAR, '?'), host, coalesce(device::VARCHAR, '?')) AS gpu,
       max(((value::UBIGINT & 236) <> 0)::INTEGER) AS throttled
FROM gpu_samples
WHERE run_id = $__run AND metric = 'clock_reasons' AND $__timeFilter(ts) AND (rank IS NULL OR rank IN $__ranks)
GROUP BY ALL
ORDER BY time
""", fmt="time_series"), w=12, h=8, field={"min": 0, "max": 1, "custom": {"drawStyle": "line", "lineInterpolation": "stepAfter"}},
        desc="1 while the GPU reports a slowing clock event reason (SW power cap, HW slowdown, SW or HW thermal slowdown, HW power brake); clock_reasons_text(bits) in SQL names them.")
run.add("table", "GPU counters per rank", rt("""
SELECT rank, subject AS gpu, sm_clock_mhz, 100 * clock_drop AS clock_drop_pct, 100 * throttle_share AS throttled_pct,
       clock_reasons_text(throttle_reasons) AS reasons, power_w, power_limit_w, temp_max_c,
       100 * fb_used_frac AS fb_used_pct, xid AS last_xid
FROM gpu_counters_wide
WHERE run_id = $__run AND rank IN $__ranks
ORDER BY clock_drop_pct DESC, rank
"""), w=24, h=8, desc="gpu_counters over the analysed steps: median SM clock and its drop against the run's median, share of samples throttled and why, power, temperature, framebuffer, last XID.")

# ---------------------------------------------------------------- findings
fnd = Board()
fvars = [
    var_query("run", "Run", "runs", multi=True, include_all=True),
    var_query("detector", "Detector", "detectors", multi=True, include_all=True, run="${run:csv}"),
    var_query("category", "Category", "categories", multi=True, include_all=True, run="${run:csv}"),
    var_query("severity", "Severity", "severities", multi=True, include_all=True, run="${run:csv}"),
]
fnd.add("barchart", "Findings by detector and severity", target("""
SELECT detector,
       count(*) FILTER (WHERE severity = 'critical') AS critical,
       count(*) FILTER (WHERE severity = 'warn') AS warn,
       count(*) FILTER (WHERE severity = 'info') AS info
FROM findings
WHERE run_id IN (${run:sqlstring}) AND detector IN (${detector:sqlstring})
GROUP BY detector
ORDER BY critical DESC, warn DESC, detector
"""), w=24, h=7, options={"stacking": "normal"})
fnd.add("table", "Findings", target(None, queryType="findings", run="${run:csv}", detector="${detector:csv}",
                                    category="${category:csv}", severity="${severity:csv}"), w=24, h=14,
        desc="The findings builder (run, detector, category, severity), worst first. message says what was seen; fix what to change.")

# GPU hardware findings on the time axis: at the first step of the rank
# whose counters show the fault (a throttled sample, else its first step);
# a finding on several GPUs (a cap across the job, NVLink unused on a host)
# at the first such step of any rank
hw_annotations = {"name": "GPU hardware findings", "enable": True, "iconColor": "red", "datasource": DS,
                  "target": rt("""
SELECT make_timestamp_ns(coalesce(min(rs.start_ns) FILTER (WHERE rs.throttle_share > 0), min(rs.start_ns))) AS time,
       f.detector || coalesce(' on rank ' || f.rank, ' on ' || f.subject, '') || ': ' || f.message AS text,
       f.severity AS tags
FROM findings f
JOIN rank_steps rs ON rs.run_id = f.run_id AND (rs.rank = f.rank OR f.rank IS NULL)
WHERE f.run_id = $__run AND f.detector IN ('gpu_throttle', 'gpu_clock_cap', 'gpu_xid', 'gpu_mem_full', 'gpu_link')
GROUP BY f.detector, f.rank, f.subject, f.message, f.severity
""")}

for name, d in {
    "fleet-overview.json": dashboard("trainscope-fleet", "trainscope / fleet", "Every run in the time range: findings, bottlenecks, memory waste, ingestion.", fleet, []),
    "run-drilldown.json": dashboard("trainscope-run", "trainscope / run", "One run: step times, GPU time breakdown, communication, stragglers, kernels, findings, GPU counters.", run, runvars,
                                    annotations=[hw_annotations]),
    "findings.json": dashboard("trainscope-findings", "trainscope / findings", "Detector findings across runs, filtered by run, detector, category, severity.", fnd, fvars),
}.items():
    with open(os.path.join(HERE, "dashboards", name), "w") as f:
        json.dump(d, f, indent=2)
        f.write("\n")
