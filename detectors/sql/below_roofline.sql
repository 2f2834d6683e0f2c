-- name: below_roofline
-- category: compute
-- kind: finding
-- severity: warn
-- description: unique operator calls (name, input shapes, dtype; record_shapes) whose kernels reach less than max_roof_pct of their roofline (the bound measured by Nsight Compute where the run has an ncu export of the call's longest kernel, else modelled) and would give back at least min_saved_pct of the run's GPU time at it, largest saving first, with the bound and the advice that follows from it: latency-bound (kernels averaging under latency_us) -> CUDA graphs or more work per call; a GEMM in FP32 -> bf16 or TF32; a GEMM with dims that are not multiples of 8 -> padding; other compute-bound work -> kernel selection or clocks; memory-bound work -> contiguous inputs, fusion, fused optimizers
-- threshold: max_roof_pct = 50  # a unique call reaching less than this percentage of its roofline is far below it
-- threshold: min_saved_pct = 2  # time it would save at its roofline, percent of the run's GPU time (the ranks' GPU spans summed)
-- threshold: latency_us = 10  # kernels averaging less than this are latency-bound
-- threshold: top = 5  # findings per run at most
-- fix: act on the bound the finding names: latency-bound calls want CUDA graphs (torch.compile mode="reduce-overhead") or more work per call; FP32 GEMMs want bf16 autocast or TF32; GEMMs with ragged dims want padding to multiples of 64; aligned compute-bound calls want a better kernel (torch.compile mode="max-autotune") or a GPU that holds its clock (see gpu_throttle); memory-bound calls want contiguous inputs and fusion with their neighbours
-- cause: slow_kernel
-- shows: fp32
WITH span AS (
    SELECT run_id, sum(span_ns) AS span_ns FROM gpu_span GROUP BY run_id
), s AS (
    SELECT o.*,
           coalesce(measured_bound, roof_bound(gpu_ns, kernels, ideal_ns, compute_ns, memory_ns, $latency_us * 1000)) AS bound,
           greatest(gpu_ns - ideal_ns, 0) AS saved_ns,
           list_distinct(list_filter(regexp_extract_all(op_shape, '\d+')::BIGINT[], x -> x > 1 AND x % 8 <> 0)) AS ragged,
           sp.span_ns AS run_span_ns
    FROM op_roofline_measured o JOIN span sp USING (run_id)
), a AS (
    SELECT *,
           CASE WHEN bound = 'latency' AND sol_c IS NOT NULL
                THEN printf('Nsight Compute measured its kernel at %.0f%% of compute and %.0f%% of memory speed of light, far from both roofs: latency-bound (see kernel_limits for its occupancy and ncu''s hints)', sol_c, coalesce(sol_m, 0))
                WHEN bound = 'latency'
                THEN printf('latency-bound: its kernels average %s, too short to approach either roof (launch, ramp-up and tail dominate); capture the step in CUDA graphs (torch.compile mode="reduce-overhead") or give each call more work (a larger micro-batch, fused operators)', fmt_ns(gpu_ns / kernels))
                WHEN op_class = 'gemm' AND dtype = 'fp32'
                THEN printf('it runs in FP32, %.0f TFLOP/s peak without tensor cores: bf16 autocast (torch.autocast) or TF32 (torch.backends.cuda.matmul.allow_tf32 = True) moves it onto tensor cores, several times that roof', peak_flops / 1e12)
                WHEN op_class IN ('gemm', 'conv') AND len(ragged) > 0
                THEN printf('dims %s are not multiples of 8, so tensor-core tiles run partly empty: pad them (vocabulary, hidden and channel sizes) to multiples of 64', array_to_string(ragged, ', '))
                WHEN op_class = 'attention'
                THEN 'check which attention backend runs (torch.nn.attention.sdpa_kernel: FlashAttention-3 or cuDNN attention on Hopper outrun FlashAttention-2), use head dims of 64 or 128, and pack short sequences together (variable-length attention) so that each call does more work'
                WHEN coalesce(compute_ns, 0) >= memory_ns
                THEN 'its shapes are aligned: look at the kernel chosen for them (torch.compile mode="max-autotune", cuBLASLt heuristics), at whether the dims fill the SMs, and at the GPU clock (gpu_throttle)'
                WHEN op_class = 'optimizer'
                THEN 'memory-bound: use the fused optimizer (torch.optim.AdamW(fused=True)) so that each parameter is read and written once per step'
                ELSE 'memory-bound below the bandwidth it could use: make its inputs contiguous (a strided or transposed input wastes much of each memory transaction) and fuse it with its neighbours (torch.compile) so that its tensors are read once' END AS advice
    FROM s
), f AS (
    SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY saved_ns DESC, name, op_shape) AS pos
    FROM a
    WHERE ideal_ns < $max_roof_pct / 100 * gpu_ns
      AND saved_ns >= $min_saved_pct / 100 * run_span_ns
)
SELECT run_id,
       CASE WHEN ranks = 1 THEN top_rank END AS rank,
       printf('%s %s %s', name, clip(op_shape, 120), coalesce(dtype, '?')) AS subject,
       'roof_pct' AS metric,
       round(ideal_ns / gpu_ns, 4) AS value,
       $max_roof_pct / 100 AS threshold,
       printf('%s %s (%s, %d calls on %d rank(s)) ran its kernels for %s at %.1f TFLOP/s and %.2f TB/s: %.0f%% of its roofline, which is %s-bound on %s (%.1f FLOP/B against a ridge at %.0f FLOP/B); at the roofline it would take %s, %s less (%.1f%% of the run''s GPU time). %s.',
              name, clip(op_shape, 120), coalesce(dtype, 'dtype unknown'),
              calls, ranks, fmt_ns(gpu_ns), flops / (gpu_ns / 1e9) / 1e12, bytes / (gpu_ns / 1e9) / 1e12,
              100 * ideal_ns / gpu_ns, CASE WHEN coalesce(compute_ns, 0) >= memory_ns THEN 'compute' ELSE 'memory' END, gpu,
              flops / bytes, coalesce(peak_flops / peak_bw, 0), fmt_ns(ideal_ns), fmt_ns(saved_ns), 100 * saved_ns / run_span_ns,
              upper(advice[1]) || advice[2:]) AS message,
       printf('%s of GPU time at the roofline (%.1f%% of the run''s)', fmt_ns(saved_ns), 100 * saved_ns / run_span_ns) AS impact,
       'roofline_shapes metric of the same run; a Nsight Compute profile of the kernel (kernel_metrics) measures its speed of light' AS validation,
       'modelled' AS confidence,
       json_object('op', name, 'shape', op_shape, 'dtype', dtype, 'class', op_class, 'bound', bound, 'calls', calls, 'ranks', ranks,
                   'gpu_ns', gpu_ns, 'ideal_ns', round(ideal_ns), 'saved_ns', round(saved_ns), 'roof_pct', round(100 * ideal_ns / gpu_ns, 2),
                   'achieved_tflops', round(flops / (gpu_ns / 1e9) / 1e12, 2), 'achieved_tbs', round(bytes / (gpu_ns / 1e9) / 1e12, 3),
                   'intensity', round(flops / bytes, 2), 'ragged_dims', ragged, 'gpu', gpu, 'kernel', kernel,
                   'ncu_sol_compute_pct', round(sol_c, 2), 'ncu_sol_memory_pct', round(sol_m, 2), 'advice', advice)::VARCHAR AS evidence
FROM f
WHERE pos <= $top
ORDER BY run_id, pos
