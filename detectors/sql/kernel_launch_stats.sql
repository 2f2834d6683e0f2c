-- name: kernel_launch_stats
-- category: launch
-- kind: metric
-- order: 80
-- description: per rank, kernel launches matched to their runtime calls by correlation id: short kernels (GPU time below the launch call's CPU time), launch-call and launch-delay outliers, and launch delay percentiles (delay = kernel start minus the end of its launch call)
-- threshold: runtime_outlier_ns = 50000  # a launch call slower than this is an outlier (HTA runtime_cutoff, 50 us)
-- threshold: launch_delay_outlier_ns = 100000  # a kernel starting this long after its launch call ended is an outlier (HTA launch_delay_cutoff, 100 us)
WITH launches AS (
    SELECT g.run_id, g.rank, r.dur AS cpu_ns, g.dur AS gpu_ns, g.ts - (r.ts + r.dur) AS delay_ns
    FROM gpu_window g
    JOIN slices_core r ON r.run_id = g.run_id AND r.rank = g.rank AND r.correlation = g.correlation
    WHERE r.kind IN ('runtime', 'driver')
      AND r.name IN ('cudaLaunchKernel', 'cudaLaunchKernelExC', 'cuLaunchKernel', 'cuLaunchKernelEx',
                     'cudaMemcpyAsync', 'cudaMemsetAsync',
                     'hipLaunchKernel', 'hipExtLaunchKernel', 'hipModuleLaunchKernel', 'hipExtModuleLaunchKernel',
                     'hipMemcpyAsync', 'hipMemsetAsync')
)
SELECT run_id, rank,
       count(*) AS launches,
       count(*) FILTER (WHERE gpu_ns < cpu_ns AND cpu_ns <= $runtime_outlier_ns) AS short_kernels,
       pct(count(*) FILTER (WHERE gpu_ns < cpu_ns AND cpu_ns <= $runtime_outlier_ns), count(*)) AS short_pct,
       count(*) FILTER (WHERE cpu_ns > $runtime_outlier_ns) AS runtime_outliers,
       count(*) FILTER (WHERE delay_ns > $launch_delay_outlier_ns) AS launch_delay_outliers,
       avg(cpu_ns) AS mean_launch_ns,
       avg(gpu_ns) AS mean_gpu_ns,
       quantile_cont(delay_ns, 0.5) AS delay_p50_ns,
       quantile_cont(delay_ns, 0.99) AS delay_p99_ns,
       max(delay_ns) AS delay_max_ns
FROM launches
GROUP BY run_id, rank
ORDER BY run_id, rank
