-- name: pageable_memcpy
-- category: memory_ops
-- kind: finding
-- severity: warn
-- description: host-device copies that use pageable host memory (as Nsight Systems' cuda_memcpy_async rule flags): the driver stages them through a pinned buffer, so they run slower and an async copy becomes synchronous
-- threshold: min_copies = 1  # report a rank with at least this many
-- threshold: warn_ratio = 0.01  # below this share of the GPU span in such copies the finding is only info
-- fix: pin the host buffers: DataLoader(pin_memory=True), tensor.pin_memory(), then .to(device, non_blocking=True)
-- shows: copies
SELECT run_id, rank,
       'pageable_copies' AS metric,
       count(*) AS value,
       $min_copies AS threshold,
       printf('rank %d: %d copies (%s) moved %s through pageable host memory, taking %s of GPU time', rank, count(*),
              string_agg(DISTINCT coalesce(copy_kind, name), ', ' ORDER BY coalesce(copy_kind, name)),
              fmt_bytes(coalesce(sum(bytes), 0)), fmt_ns(sum(dur))) AS message,
       CASE WHEN sum(dur) < $warn_ratio * any_value(sp.span_ns) THEN 'info' END AS severity,
       json_object('copies', count(*), 'bytes', sum(bytes), 'gpu_ns', sum(dur))::VARCHAR AS evidence
FROM gpu_window g
JOIN gpu_span sp USING (run_id, rank)
WHERE kind = 'memcpy' AND host_mem = 'pageable'
GROUP BY run_id, rank
HAVING count(*) >= $min_copies
ORDER BY run_id, rank
