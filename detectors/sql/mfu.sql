-- name: mfu
-- category: utilization
-- kind: metric
-- description: per rank, model FLOPs utilisation over the analysis window: the FLOPs of the matmul, attention and convolution operators whose input shapes the trace recorded (record_shapes; forward and backward; gpu/perfmodel.go), over the GPU span, against the GPU's dense peak for each operator's dtype (gpu_specs, from the gpu/ catalog). Also how fast the kernels those operators launched ran while they ran (achieved TFLOP/s and % of peak). A lower bound: operators without a FLOP formula (fused or custom kernels) count nothing
WITH ops AS (
    SELECT run_id, rank, external_id, flops, flops_dtype
    FROM host_window
    WHERE flops IS NOT NULL AND op_class IN ('gemm', 'attention', 'conv')
), spec AS (
    SELECT r.run_id, r.rank, g AS s, g.catalog_key
    FROM ranks r JOIN gpu_specs g ON g.gpu_name = r.gpu_name
), f AS (
    SELECT o.run_id, o.rank, any_value(sp.catalog_key) AS gpu, count(*) AS ops, sum(o.flops) AS flops,
           -- seconds the work needs at peak, each operator at its dtype's peak
           sum(o.flops / (peak_tflops(sp.s, o.flops_dtype) * 1e12)) AS ideal_s,
           sum(o.flops) FILTER (WHERE peak_tflops(sp.s, o.flops_dtype) IS NULL) AS flops_no_peak
    FROM ops o JOIN spec sp ON sp.run_id = o.run_id AND sp.rank = o.rank
    GROUP BY o.run_id, o.rank
), k AS (
    -- the GPU kernels those operators launched (same External id). Their
    -- ids come as one list unnested, estimated at one row: the join's
    -- build side, so a window without such operators skips the scan of
    -- the GPU rows; DuckDB otherwise hashed every compute kernel (syn8:
    -- mfu 102 -> 49 ms of CPU)
    SELECT g.run_id, g.rank, sum(g.dur) AS kernel_ns
    FROM gpu_window g
    JOIN (SELECT unnest(l, recursive := true)
          FROM (SELECT list(DISTINCT {'run_id': run_id, 'rank': rank, 'external_id': external_id}) AS l FROM ops)) o
      ON o.run_id = g.run_id AND o.rank = g.rank AND o.external_id = g.external_id
    WHERE g.class = 'COMP'
    GROUP BY g.run_id, g.rank
)
SELECT f.run_id, f.rank, f.ops,
       round(f.flops / 1e12, 3) AS tflop,
       round(f.flops / (sp.span_ns / 1e9) / 1e12, 2) AS achieved_tflops,
       round(100 * f.ideal_s / (sp.span_ns / 1e9), 2) AS mfu_pct,
       k.kernel_ns AS matmul_kernel_ns,
       round(100 * k.kernel_ns / sp.span_ns, 2) AS matmul_time_pct,
       round(f.flops / (k.kernel_ns / 1e9) / 1e12, 2) AS matmul_tflops,
       round(100 * f.ideal_s / (k.kernel_ns / 1e9), 2) AS matmul_pct_of_peak,
       coalesce(f.flops_no_peak, 0) AS flops_without_peak
FROM f
JOIN gpu_span sp ON sp.run_id = f.run_id AND sp.rank = f.rank
LEFT JOIN k ON k.run_id = f.run_id AND k.rank = f.rank
WHERE sp.span_ns > 0
ORDER BY f.run_id, f.rank
