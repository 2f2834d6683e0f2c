-- name: roofline
-- category: compute
-- kind: metric
-- description: per run and operator class (gemm, attention, conv, softmax, norm, elementwise, reduction, embedding, optimizer; subject all for every class together), the roofline of the operators whose shapes the trace recorded (record_shapes; FLOPs and compulsory bytes from gpu/perfmodel.go) over the GPU time of the kernels they launched: achieved TFLOP/s and TB/s, arithmetic intensity (FLOP per byte), the share of the roofline reached (the least time at the dtype's dense peak or at HBM bandwidth, over the time taken), the time they would save at their roofline, which roof bounds how much of their time (compute, memory, or latency: kernels averaging under latency_us that reach less than half their roof), and the share of the window's compute-kernel time the model covers
-- threshold: latency_us = 10  # a unique call whose kernels average less than this and reach under half their roofline is latency-bound
WITH s AS (
    SELECT *, coalesce(measured_bound, roof_bound(gpu_ns, kernels, ideal_ns, compute_ns, memory_ns, $latency_us * 1000)) AS bound
    FROM op_roofline_measured
), c AS (
    SELECT run_id, coalesce(op_class, 'all') AS subject,
           sum(calls) AS calls, sum(gpu_ns) AS time_ns,
           sum(flops) / 1e12 AS tflop, sum(bytes) / 1e9 AS gbytes,
           sum(flops) / (sum(gpu_ns) / 1e9) / 1e12 AS achieved_tflops,
           sum(bytes) / (sum(gpu_ns) / 1e9) / 1e12 AS achieved_tbs,
           sum(flops) / nullif(sum(bytes), 0) AS intensity,
           100 * sum(ideal_ns) / sum(gpu_ns) AS roof_pct,
           sum(greatest(gpu_ns - ideal_ns, 0)) AS saved_ns,
           100 * coalesce(sum(gpu_ns) FILTER (WHERE bound = 'compute'), 0) / sum(gpu_ns) AS compute_bound_pct,
           100 * coalesce(sum(gpu_ns) FILTER (WHERE bound = 'memory'), 0) / sum(gpu_ns) AS memory_bound_pct,
           100 * coalesce(sum(gpu_ns) FILTER (WHERE bound = 'latency'), 0) / sum(gpu_ns) AS latency_bound_pct
    FROM s
    GROUP BY GROUPING SETS ((run_id, op_class), (run_id))
), k AS (
    -- only the runs c has: a run without modelled operators (none at all,
    -- often) then reads no GPU rows (syn8: roofline 37 -> 14 ms of CPU)
    SELECT run_id, sum(dur) AS comp_ns FROM gpu_window
    WHERE class = 'COMP' AND run_id IN (SELECT run_id FROM c)
    GROUP BY run_id
)
SELECT c.run_id, c.subject, c.calls, c.time_ns,
       round(c.tflop, 4) AS tflop, round(c.gbytes, 3) AS gbytes,
       round(c.achieved_tflops, 2) AS achieved_tflops, round(c.achieved_tbs, 3) AS achieved_tbs,
       round(c.intensity, 2) AS intensity, round(c.roof_pct, 2) AS roof_pct, c.saved_ns,
       round(c.compute_bound_pct, 2) AS compute_bound_pct, round(c.memory_bound_pct, 2) AS memory_bound_pct,
       round(c.latency_bound_pct, 2) AS latency_bound_pct,
       round(100 * c.time_ns / nullif(k.comp_ns, 0), 2) AS coverage_pct
FROM c LEFT JOIN k USING (run_id)
WHERE c.time_ns > 0
ORDER BY c.run_id, c.subject = 'all' DESC, c.time_ns DESC
