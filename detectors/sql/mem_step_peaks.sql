-- name: mem_step_peaks
-- category: memory
-- kind: metric
-- description: per rank, device and ProfilerStep, the peak memory allocated to tensors and the peak reserved by the caching allocator, from the trace's [memory] events (profile_memory=True), and how much of the reserve was unused at the allocation peak
WITH c AS (
    SELECT c.run_id, c.rank, c.device, s.step, c.ts, c.metric, c.value
    FROM counters c
    JOIN steps s ON s.run_id = c.run_id AND s.rank = c.rank AND c.ts >= s.start_ns AND c.ts < s.end_ns
    WHERE c.metric IN ('memory_allocated_bytes', 'memory_reserved_bytes') AND c.device IS NOT NULL
), p AS (
    SELECT run_id, rank, device, step,
           max(value) FILTER (WHERE metric = 'memory_allocated_bytes') AS peak_allocated_bytes,
           max(value) FILTER (WHERE metric = 'memory_reserved_bytes') AS peak_reserved_bytes,
           count(*) FILTER (WHERE metric = 'memory_allocated_bytes') AS samples
    FROM c
    GROUP BY run_id, rank, device, step
)
SELECT run_id, rank, step AS step_lo, step AS step_hi, 'device ' || device AS subject,
       peak_allocated_bytes, peak_reserved_bytes,
       peak_reserved_bytes - peak_allocated_bytes AS unused_at_peak_bytes,
       samples
FROM p
WHERE peak_allocated_bytes IS NOT NULL
ORDER BY run_id, rank, device, step
