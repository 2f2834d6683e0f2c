-- name: temporal_breakdown
-- category: utilization
-- kind: metric
-- description: per rank, GPU idle, compute and non-compute time over the span of GPU activity in the analysis window, as HTA's temporal breakdown defines them (communication or memory work overlapped by compute counts as compute)
WITH all_gpu AS (
    SELECT {'run_id': run_id, 'rank': rank} AS g, ts AS s, end_ts AS e FROM gpu_window
), comp AS (
    SELECT {'run_id': run_id, 'rank': rank} AS g, ts AS s, end_ts AS e FROM gpu_window WHERE class = 'COMP'
), busy AS (
    SELECT g, sum(e - s) AS busy_ns FROM interval_union(all_gpu) GROUP BY g
), compute AS (
    SELECT g, sum(e - s) AS compute_ns FROM interval_union(comp) GROUP BY g
)
SELECT sp.run_id, sp.rank,
       sp.span_ns,
       sp.span_ns - b.busy_ns AS idle_ns,
       coalesce(c.compute_ns, 0) AS compute_ns,
       b.busy_ns - coalesce(c.compute_ns, 0) AS non_compute_ns,
       pct(sp.span_ns - b.busy_ns, sp.span_ns) AS idle_pct,
       pct(coalesce(c.compute_ns, 0), sp.span_ns) AS compute_pct,
       pct(b.busy_ns - coalesce(c.compute_ns, 0), sp.span_ns) AS non_compute_pct
FROM gpu_span sp
JOIN busy b ON b.g = {'run_id': sp.run_id, 'rank': sp.rank}
LEFT JOIN compute c ON c.g = b.g
ORDER BY sp.run_id, sp.rank
