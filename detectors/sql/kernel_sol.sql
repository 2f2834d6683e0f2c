-- name: kernel_sol
-- category: compute
-- kind: metric
-- description: per run and kernel that Nsight Compute profiled (kernel_metrics, from ncu --csv exports), its measured speed of light: launches profiled, mean duration, compute (SM) and memory throughput as a percentage of peak, DRAM throughput and bytes, achieved and theoretical occupancy, registers per thread, tensor-pipe activity where measured, and the trace's calls and GPU time of the kernels of the same name, so that measured figures sit beside the modelled roofline
SELECT run_id,
       clip(kernel, 160) AS subject,
       launches, round(duration_ns) AS duration_ns,
       round(sol_compute_pct, 2) AS sol_compute_pct, round(sol_memory_pct, 2) AS sol_memory_pct,
       round(dram_pct, 2) AS dram_pct, round(dram_bytes) AS dram_bytes,
       round(achieved_occupancy_pct, 2) AS achieved_occupancy_pct, round(theoretical_occupancy_pct, 2) AS theoretical_occupancy_pct,
       registers, round(tensor_pct, 2) AS tensor_pct,
       trace_calls, trace_ns
FROM kernel_profiles
ORDER BY run_id, coalesce(trace_ns, 0) DESC, launches * coalesce(duration_ns, 0) DESC, kernel
