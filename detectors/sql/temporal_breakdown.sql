-- name: temporal_breakdown
-- category: utilization
-- kind: metric
-- description: per rank, GPU idle, compute and non-compute time over the span of GPU activity in the analysis window, as HTA's temporal breakdown defines them (communication or memory work overlapped by compute counts as compute)
WITH t AS (
    SELECT run_id, rank,
           sum(ns) AS busy_ns,
           coalesce(sum(ns) FILTER (WHERE comp_active(state)), 0) AS compute_ns
    FROM gpu_class_time
    GROUP BY run_id, rank
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
