-- name: runtime_api
-- category: runtime
-- kind: metric
-- description: per rank, CUDA/HIP runtime and driver API calls by purpose (launch, synchronize, memcpy/memset, other): calls, host time, the part during which the GPU ran nothing (exposed: the GPU waited on the host), and its bottleneck ratio (exposed time / GPU span, as PerfTracker defines it)
WITH api AS (
    SELECT run_id, rank, ts, ts + dur AS end_ts, dur,
           CASE WHEN name ILIKE '%launch%' OR name ILIKE '%graphlaunch%' THEN 'launch'
                WHEN name ILIKE '%synchronize%' OR name ILIKE '%streamwaitevent%' OR name ILIKE '%eventquery%' OR name ILIKE '%streamquery%' THEN 'synchronize'
                WHEN name ILIKE '%memcpy%' OR name ILIKE '%memset%' THEN 'memcpy'
                ELSE 'other' END AS purpose
    FROM host_window
    WHERE kind IN ('runtime', 'driver')
), keys AS (
    SELECT DISTINCT run_id, rank, purpose FROM api
), a AS (
    SELECT {'run_id': run_id, 'rank': rank, 'purpose': purpose} AS g, ts AS s, end_ts AS e FROM api
), b AS (
    -- the GPU's busy islands (all streams' work merged), once per purpose
    SELECT {'run_id': k.run_id, 'rank': k.rank, 'purpose': k.purpose} AS g, w.start_ns AS s, w.end_ns AS e
    FROM gpu_busy w JOIN keys k ON k.run_id = w.run_id AND k.rank = w.rank
), x AS (
    SELECT g.run_id AS run_id, g.rank AS rank, g.purpose AS purpose, a_ns, exposed_ns FROM exposed_time(a, b)
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
