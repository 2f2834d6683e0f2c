-- name: roofline_shapes
-- category: compute
-- kind: metric
-- description: per run, the unique operator calls (name, input shapes, dtype) that would save the most GPU time at their roofline, top ones first: calls, GPU time of their kernels, achieved TFLOP/s and TB/s, arithmetic intensity, share of the roofline reached and the time saved at it; the subject names the bound (compute, memory or latency)
-- threshold: latency_us = 10  # kernels averaging less than this that reach under half their roofline are latency-bound
-- threshold: top = 20  # unique calls listed per run
WITH s AS (
    SELECT *,
           CASE WHEN gpu_ns / kernels < $latency_us * 1000 AND ideal_ns < 0.5 * gpu_ns THEN 'latency'
                WHEN coalesce(compute_ns, 0) >= memory_ns THEN 'compute' ELSE 'memory' END AS bound,
           greatest(gpu_ns - ideal_ns, 0) AS saved_ns
    FROM op_roofline_shapes
), r AS (
    SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY saved_ns DESC, name, op_shape) AS pos
    FROM s
)
SELECT run_id,
       printf('%s %s %s, %s-bound', name,
              CASE WHEN length(op_shape) > 120 THEN left(op_shape, 117) || '...' ELSE op_shape END,
              coalesce(dtype, '?'), bound) AS subject,
       calls, gpu_ns AS time_ns,
       round(flops / (gpu_ns / 1e9) / 1e12, 2) AS achieved_tflops,
       round(bytes / (gpu_ns / 1e9) / 1e12, 3) AS achieved_tbs,
       round(flops / bytes, 2) AS intensity,
       round(100 * ideal_ns / gpu_ns, 2) AS roof_pct,
       saved_ns
FROM r
WHERE pos <= $top
ORDER BY run_id, pos
