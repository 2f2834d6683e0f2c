-- name: runtime_api
-- category: runtime
-- kind: metric
-- description: per rank, CUDA/HIP runtime and driver API calls by purpose (launch, synchronize, memcpy/memset, other): calls, host time, the part during which the GPU ran nothing (exposed: the GPU waited on the host; summed per call), and its bottleneck ratio (exposed time / GPU span, as PerfTracker defines it)
WITH calls AS (
    -- per API name first: a rank makes a few dozen distinct calls, hundreds
    -- of thousands of times, and the purpose is a function of the name
    -- (matching every call's name cost 60% of this detector on syn8); the
    -- shared host_stack_time has them summed per thread and stack already
    -- (134 -> 7 ms of CPU on syn8)
    SELECT run_id, rank, name, sum(slices) AS calls, sum(slices_ns) AS host_ns, sum(idle_ns) AS exposed_ns
    FROM host_stack_time
    WHERE kind IN ('runtime', 'driver')
    GROUP BY ALL
), t AS (
    -- gpu_busy_dur: the part of the call during which the GPU was busy
    SELECT run_id, rank,
           CASE WHEN name ILIKE '%launch%' OR name ILIKE '%graphlaunch%' THEN 'launch'
                WHEN name ILIKE '%synchronize%' OR name ILIKE '%streamwaitevent%' OR name ILIKE '%eventquery%' OR name ILIKE '%streamquery%' THEN 'synchronize'
                WHEN name ILIKE '%memcpy%' OR name ILIKE '%memset%' THEN 'memcpy'
                ELSE 'other' END AS purpose,
           sum(calls)::BIGINT AS calls, sum(host_ns) AS host_ns, sum(exposed_ns) AS exposed_ns
    FROM calls GROUP BY ALL
)
SELECT t.run_id, t.rank, t.purpose AS subject, t.calls, t.host_ns,
       coalesce(t.exposed_ns, 0) AS exposed_ns,
       pct(coalesce(t.exposed_ns, 0), sp.span_ns) AS bottleneck_pct
FROM t
JOIN gpu_span sp ON sp.run_id = t.run_id AND sp.rank = t.rank
ORDER BY t.run_id, t.rank, exposed_ns DESC, subject
