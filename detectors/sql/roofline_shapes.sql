-- name: roofline_shapes
-- category: compute
-- kind: metric
-- description: per run, the unique operator calls (name, input shapes, dtype) that would save the most GPU time at their roofline, top ones first: calls, GPU time of their kernels, achieved TFLOP/s and TB/s, arithmetic intensity, share of the roofline reached and the time saved at it; and Nsight Compute's measured compute and memory speed of light of the call's longest kernel where the run has an ncu export of it; the subject names the bound (compute, memory or latency: measured where ncu profiled the kernel, else modelled)
-- threshold: latency_us = 10  # kernels averaging less than this that reach under half their roofline are latency-bound
-- threshold: top = 20  # unique calls listed per run
WITH s AS (
    SELECT *, coalesce(measured_bound, roof_bound(gpu_ns, kernels, ideal_ns, compute_ns, memory_ns, $latency_us * 1000)) AS bound,
           greatest(gpu_ns - ideal_ns, 0) AS saved_ns
    FROM op_roofline_measured
), r AS (
    SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY saved_ns DESC, name, op_shape) AS pos
    FROM s
)
SELECT run_id,
       printf('%s %s %s, %s-bound', name,
              clip(op_shape, 120),
              coalesce(dtype, '?'), bound) AS subject,
       calls, gpu_ns AS time_ns,
       round(flops / (gpu_ns / 1e9) / 1e12, 2) AS achieved_tflops,
       round(bytes / (gpu_ns / 1e9) / 1e12, 3) AS achieved_tbs,
       round(flops / bytes, 2) AS intensity,
       round(100 * ideal_ns / gpu_ns, 2) AS roof_pct,
       saved_ns,
       round(sol_c, 2) AS ncu_sol_compute_pct, round(sol_m, 2) AS ncu_sol_memory_pct
FROM r
WHERE pos <= $top
ORDER BY run_id, pos
