-- name: util_spread
-- category: utilization
-- kind: metric
-- description: per run, GPU compute utilization (the share of each rank's GPU span with a compute kernel running, HTA's compute time) across ranks: minimum, median and maximum, which ranks hold the extremes, and how many ranks are abnormal by robust z-score (PerfTracker's GPU compute section)
-- threshold: min_z = 3.0  # |robust z| at or above this marks a rank abnormal
WITH u AS (
    SELECT c.run_id, c.rank, 100.0 * coalesce(sum(c.ns) FILTER (WHERE comp_active(c.state)), 0) / any_value(sp.span_ns) AS util
    FROM gpu_class_time c JOIN gpu_span sp ON sp.run_id = c.run_id AND sp.rank = c.rank
    WHERE sp.span_ns > 0
    GROUP BY c.run_id, c.rank
), m AS (
    SELECT run_id, median(util) AS med FROM u GROUP BY run_id
), d AS (
    -- median absolute deviation, floored at one percentage point so that
    -- ranks that agree closely do not make a small gap significant
    SELECT u.run_id, greatest(median(abs(u.util - m.med)), 1.0) AS mad FROM u JOIN m ON m.run_id = u.run_id GROUP BY u.run_id
)
SELECT u.run_id, count(*) AS ranks,
       round(min(u.util), 2) AS min_util_pct, round(any_value(m.med), 2) AS median_util_pct, round(max(u.util), 2) AS max_util_pct,
       arg_min(u.rank, (u.util, u.rank)) AS min_rank, arg_max(u.rank, (u.util, -u.rank)) AS max_rank,
       count(*) FILTER (WHERE abs(robust_z(u.util, m.med, d.mad)) >= $min_z) AS abnormal_ranks
FROM u JOIN m ON m.run_id = u.run_id JOIN d ON d.run_id = u.run_id
GROUP BY u.run_id
ORDER BY u.run_id
