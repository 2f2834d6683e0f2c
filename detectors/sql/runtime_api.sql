-- name: runtime_api
-- category: runtime
-- kind: metric
-- description: per rank, CUDA/HIP runtime and driver API calls by purpose (launch, synchronize, memcpy/memset, other): calls, host time, the part during which the GPU ran nothing (exposed: the GPU waited on the host; summed per call), and its bottleneck ratio (exposed time / GPU span, as PerfTracker defines it)
WITH api AS (
    SELECT run_id, rank, rk, ts, ts + dur AS end_ts, dur,
           CASE WHEN name ILIKE '%launch%' OR name ILIKE '%graphlaunch%' THEN 'launch'
                WHEN name ILIKE '%synchronize%' OR name ILIKE '%streamwaitevent%' OR name ILIKE '%eventquery%' OR name ILIKE '%streamquery%' THEN 'synchronize'
                WHEN name ILIKE '%memcpy%' OR name ILIKE '%memset%' THEN 'memcpy'
                ELSE 'other' END AS purpose
    FROM host_window
    WHERE kind IN ('runtime', 'driver')
), isl AS (
    -- busy time up to any instant: cum_before + the part of the island
    -- that started last before it (one ASOF lookup per call end)
    SELECT run_id, rank, rk, start_ns, end_ns,
           sum(end_ns - start_ns) OVER (PARTITION BY rk ORDER BY start_ns ROWS UNBOUNDED PRECEDING) - (end_ns - start_ns) AS cum_before
    FROM gpu_busy
), b_start AS (
    SELECT a.*, coalesce(i.cum_before + least(a.ts, i.end_ns) - i.start_ns, 0) AS busy_at_start
    FROM api a ASOF LEFT JOIN isl i ON i.rk = a.rk AND a.ts >= i.start_ns
), x AS (
    SELECT s.run_id, s.rank, s.purpose,
           sum(s.dur - (coalesce(i.cum_before + least(s.end_ts, i.end_ns) - i.start_ns, 0) - s.busy_at_start)) AS exposed_ns
    FROM b_start s ASOF LEFT JOIN isl i ON i.rk = s.rk AND s.end_ts >= i.start_ns
    GROUP BY s.run_id, s.rank, s.purpose
), t AS (
    SELECT run_id, rank, purpose, count(*) AS calls, sum(dur) AS host_ns FROM api GROUP BY ALL
)
SELECT t.run_id, t.rank, t.purpose AS subject, t.calls, t.host_ns,
       coalesce(x.exposed_ns, 0) AS exposed_ns,
       pct(coalesce(x.exposed_ns, 0), sp.span_ns) AS bottleneck_pct
FROM t
JOIN gpu_span sp ON sp.run_id = t.run_id AND sp.rank = t.rank
LEFT JOIN x ON x.run_id = t.run_id AND x.rank = t.rank AND x.purpose = t.purpose
ORDER BY t.run_id, t.rank, exposed_ns DESC, subject
