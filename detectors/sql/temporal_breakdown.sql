-- name: temporal_breakdown
-- category: utilization
-- kind: metric
-- order: 10
-- description: per rank, GPU idle, compute and non-compute time over the span of GPU activity in the analysis window, as HTA's temporal breakdown defines them (communication or memory work overlapped by compute counts as compute); non-compute splits further into collective transfer, waiting in a collective for a late member, and memory work, each where no compute runs
WITH t AS (
    SELECT run_id, rank,
           sum(ns) AS busy_ns,
           coalesce(sum(ns) FILTER (WHERE comp_active(state)), 0) AS compute_ns,
           coalesce(sum(ns) FILTER (WHERE comm_active(state) AND NOT comp_active(state)), 0) AS transfer_ns,
           coalesce(sum(ns) FILTER (WHERE wait_active(state) AND NOT comp_active(state) AND NOT comm_active(state)), 0) AS wait_ns
    FROM gpu_class_time
    GROUP BY run_id, rank
)
SELECT sp.run_id, sp.rank,
       sp.span_ns,
       sp.span_ns - t.busy_ns AS idle_ns,
       t.compute_ns,
       t.busy_ns - t.compute_ns AS non_compute_ns,
       t.transfer_ns,
       t.wait_ns,
       pct(sp.span_ns - t.busy_ns, sp.span_ns) AS idle_pct,
       pct(t.compute_ns, sp.span_ns) AS compute_pct,
       pct(t.busy_ns - t.compute_ns, sp.span_ns) AS non_compute_pct,
       pct(t.transfer_ns, sp.span_ns) AS transfer_pct,
       pct(t.wait_ns, sp.span_ns) AS wait_pct
FROM gpu_span sp
JOIN t ON t.run_id = sp.run_id AND t.rank = sp.rank
ORDER BY sp.run_id, sp.rank
