-- name: temporal_breakdown
-- category: utilization
-- kind: metric
-- description: per rank, GPU idle, compute and non-compute time over the span of GPU activity in the analysis window, as HTA's temporal breakdown defines them (communication or memory work overlapped by compute counts as compute)
WITH gpu AS (
    -- compute counts 1, other GPU work 2^20: state % 2^20 > 0 means compute runs
    SELECT {'run_id': run_id, 'rank': rank} AS g, ts AS s, end_ts AS e,
           CASE WHEN class = 'COMP' THEN 1 ELSE 1048576 END AS w
    FROM gpu_window
), t AS (
    SELECT g.run_id AS run_id, g.rank AS rank,
           sum(ns) AS busy_ns,
           coalesce(sum(ns) FILTER (WHERE state % 1048576 > 0), 0) AS compute_ns
    FROM active_time(gpu)
    GROUP BY g
)
SELECT sp.run_id, sp.rank,
       sp.span_ns,
       sp.span_ns - t.busy_ns AS idle_ns,
       t.compute_ns,
       t.busy_ns - t.compute_ns AS non_compute_ns,
       pct(sp.span_ns - t.busy_ns, sp.span_ns) AS idle_pct,
       pct(t.compute_ns, sp.span_ns) AS compute_pct,
       pct(t.busy_ns - t.compute_ns, sp.span_ns) AS non_compute_pct
FROM gpu_span sp
JOIN t ON t.run_id = sp.run_id AND t.rank = sp.rank
ORDER BY sp.run_id, sp.rank
