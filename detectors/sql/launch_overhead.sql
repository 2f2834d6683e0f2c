-- name: launch_overhead
-- category: launch
-- kind: finding
-- severity: warn
-- description: ranks where many kernels run for less time than the CPU takes to launch them, so the GPU outpaces the host
-- threshold: min_short_ratio = 0.30  # short kernels / launches
-- threshold: min_launches = 100  # ignore ranks with fewer launches
-- fix: launch fewer, larger kernels: torch.compile (fusion) or CUDA graphs for steady steps, fused optimizers (foreach/fused Adam), larger micro-batches; avoid per-element Python loops over tensors
-- shows: launch
WITH l AS (
    SELECT run_id, rank,
           max(launches) AS launches, max(short_kernels) AS short_kernels, max(short_pct) AS short_pct,
           max(mean_launch_ns) AS mean_launch_ns, max(mean_gpu_ns) AS mean_gpu_ns
    FROM metric_kernel_launch_stats
    GROUP BY run_id, rank
)
SELECT run_id, rank,
       'short_kernel_ratio' AS metric,
       short_pct / 100 AS value,
       $min_short_ratio AS threshold,
       printf('rank %d: %d of %d kernels (%.0f%%) ran shorter on the GPU than their launch call took on the CPU (mean launch %s, mean kernel %s)',
              rank, short_kernels::BIGINT, launches::BIGINT, short_pct, fmt_ns(mean_launch_ns), fmt_ns(mean_gpu_ns)) AS message,
       'hypothesis' AS confidence,
       'shorter steps when the GPU waits on launches; gpu_idle shows whether it does' AS impact,
       json_object('launches', launches, 'short_kernels', short_kernels, 'mean_launch_ns', round(mean_launch_ns), 'mean_gpu_ns', round(mean_gpu_ns))::VARCHAR AS evidence
FROM l
WHERE launches >= $min_launches AND short_pct / 100 >= $min_short_ratio
ORDER BY run_id, rank
