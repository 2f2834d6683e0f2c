-- name: mem_fleet
-- category: memory
-- kind: metric
-- order: 130
-- description: per run, the GPU memory reserved but holding no tensor, summed over ranks and devices: from snapshots (reserved - allocated), and from traces (the largest per-step unused-at-peak of each rank and device), in GiB, for comparing runs across a fleet
WITH snap AS (
    SELECT run_id, sum(total_size - allocated_size) / 2^30 AS snapshot_unused_gib, count(DISTINCT (rank, device)) AS snapshot_devices
    FROM mem_segments GROUP BY run_id
), steps AS (
    SELECT run_id, sum(worst) / 2^30 AS trace_unused_gib, count(*) AS trace_devices
    FROM (SELECT run_id, rank, device, max(peak_reserved_bytes - peak_allocated_bytes) AS worst
          FROM step_memory_peaks GROUP BY run_id, rank, device)
    GROUP BY run_id
)
SELECT coalesce(snap.run_id, steps.run_id) AS run_id,
       coalesce(snapshot_unused_gib, 0) AS snapshot_unused_gib, coalesce(snapshot_devices, 0) AS snapshot_devices,
       coalesce(trace_unused_gib, 0) AS trace_unused_gib, coalesce(trace_devices, 0) AS trace_devices
FROM snap FULL OUTER JOIN steps ON steps.run_id = snap.run_id
ORDER BY run_id
