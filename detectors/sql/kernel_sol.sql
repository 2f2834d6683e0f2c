-- name: kernel_sol
-- category: compute
-- kind: metric
-- description: per run and kernel that Nsight Compute profiled (kernel_metrics, from ncu --csv exports), its measured speed of light: launches profiled, mean duration, compute (SM) and memory throughput as a percentage of peak, DRAM throughput and bytes, achieved and theoretical occupancy, registers per thread, tensor-pipe activity where measured, and the trace's calls and GPU time of the kernels of the same name, so that measured figures sit beside the modelled roofline
WITH p AS (
    SELECT run_id, kernel, count(*) AS launches, avg(duration_ns) AS duration_ns,
           avg(sol_compute_pct) AS sol_compute_pct, avg(sol_memory_pct) AS sol_memory_pct, avg(dram_pct) AS dram_pct,
           avg(dram_bytes) AS dram_bytes, avg(achieved_occupancy_pct) AS achieved_occupancy_pct,
           avg(theoretical_occupancy_pct) AS theoretical_occupancy_pct, max(registers) AS registers, avg(tensor_pct) AS tensor_pct,
           any_value(grid_x) AS grid_x, any_value(block_x) AS block_x
    FROM kernel_sol
    GROUP BY run_id, kernel
), t AS (
    SELECT g.run_id, g.name, count(*) AS trace_calls, sum(g.dur) AS trace_ns
    FROM gpu_window g
    WHERE g.class = 'COMP' AND g.name IN (SELECT kernel FROM p)
    GROUP BY g.run_id, g.name
)
SELECT p.run_id,
       CASE WHEN length(p.kernel) > 160 THEN left(p.kernel, 157) || '...' ELSE p.kernel END AS subject,
       p.launches, round(p.duration_ns) AS duration_ns,
       round(p.sol_compute_pct, 2) AS sol_compute_pct, round(p.sol_memory_pct, 2) AS sol_memory_pct,
       round(p.dram_pct, 2) AS dram_pct, round(p.dram_bytes) AS dram_bytes,
       round(p.achieved_occupancy_pct, 2) AS achieved_occupancy_pct, round(p.theoretical_occupancy_pct, 2) AS theoretical_occupancy_pct,
       p.registers, round(p.tensor_pct, 2) AS tensor_pct,
       t.trace_calls, t.trace_ns
FROM p LEFT JOIN t ON t.run_id = p.run_id AND t.name = p.kernel
ORDER BY p.run_id, coalesce(t.trace_ns, 0) DESC, p.launches * coalesce(p.duration_ns, 0) DESC, p.kernel
