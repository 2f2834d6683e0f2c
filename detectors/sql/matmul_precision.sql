-- name: matmul_precision
-- category: compute
-- kind: metric
-- description: per rank, the GPU time of matmul, attention and convolution kernels by math mode: bf16, fp16, fp8 (tensor cores), tf32 (FP32 inputs on tensor cores), fp32 (FP32 on the CUDA cores: TF32 off), or fp32? (FP32 inputs, neither the kernel nor its speed telling), from the launching operator's input dtype (record_shapes), the kernel's name (tf32, ffma, sgemm, simt) and, where the name does not say, the operator's achieved TFLOP/s (no faster than the GPU's FP32 peak: the CUDA cores; well above it: tensor cores); per step and as a share of the GPU span, with what FP32 on the CUDA cores would take at the TF32 peak and at the bf16 peak of the GPU (gpu_specs): the gain of torch.backends.cuda.matmul.allow_tf32 = True, or of bf16 autocast
WITH comp AS MATERIALIZED (
    -- the window's compute kernels, read once for both the distinct names
    -- and the kernels (two scans of gpu_window before; syn8: 178 -> 147 ms
    -- of CPU)
    SELECT run_id, rank, name, dur, step, external_id FROM gpu_window WHERE class = 'COMP'
), ops AS (
    -- the operators that launch matmul work, with their inputs' dtype and
    -- how fast their kernels ran (FLOPs from their shapes over their
    -- kernels' time)
    SELECT h.run_id, h.rank, h.external_id, any_value(lower(h.flops_dtype)) AS dtype,
           sum(h.flops) / nullif(sum(h.op_gpu_dur), 0) * 1e9 / 1e12 AS achieved_tflops
    FROM host_window h
    WHERE h.op_class IN ('gemm', 'attention', 'conv') AND h.external_id IS NOT NULL
    GROUP BY h.run_id, h.rank, h.external_id
), peaks AS (
    SELECT r.run_id, r.rank, g.fp32_tflops FROM ranks r JOIN gpu_specs g ON g.gpu_name = r.gpu_name
), names AS (
    -- what a kernel's name tells, once per distinct name rather than per
    -- kernel (syn8: 231 -> 104 ms of CPU, bench/RESULTS.md)
    SELECT name,
           CASE
               WHEN regexp_matches(name, '(?i)tf32|xmmac?_gemm_f32f32_tf32') THEN 'tf32'
               WHEN regexp_matches(name, '(?i)e4m3|e5m2|fp8') THEN 'fp8'
               WHEN regexp_matches(name, '(?i)bf16|bfloat16') THEN 'bf16'
               WHEN regexp_matches(name, '(?i)f16|fp16|half|h884|h1688|h16816') THEN 'fp16'
               WHEN regexp_matches(name, '(?i)sgemm|ffma|simt_s|f32f32_f32f32|fmha_cutlass[fb]_f32|_f32_') THEN 'fp32'
           END AS name_mode,
           regexp_matches(name, '(?i)gemm|nvjet|xmma|cutlass|flash|fmha|attention|conv|wgrad|dgrad') AS matmul_name
    FROM (SELECT DISTINCT name FROM comp)
), k AS (
    SELECT g.run_id, g.rank, g.name, g.dur, g.step, o.dtype,
           CASE
               WHEN n.name_mode IS NOT NULL THEN n.name_mode
               WHEN o.dtype IN ('bf16', 'fp16', 'fp8') THEN o.dtype
               -- FP32 inputs, the kernel's name not telling (nvjet ...): its
               -- speed does; no faster than the FP32 peak is the CUDA cores
               WHEN o.dtype = 'fp32' AND o.achieved_tflops <= 1.1 * p.fp32_tflops THEN 'fp32'
               WHEN o.dtype = 'fp32' AND o.achieved_tflops > 1.5 * p.fp32_tflops THEN 'tf32'
               WHEN o.dtype = 'fp32' THEN 'fp32?'
           END AS mode
    FROM comp g
    LEFT JOIN names n ON n.name = g.name
    LEFT JOIN ops o ON o.run_id = g.run_id AND o.rank = g.rank AND o.external_id = g.external_id
    LEFT JOIN peaks p ON p.run_id = g.run_id AND p.rank = g.rank
    WHERE (o.external_id IS NOT NULL OR n.matmul_name)
), spec AS (
    SELECT r.run_id, r.rank, g.fp32_tflops, g.tf32_tflops, g.bf16_tflops
    FROM ranks r LEFT JOIN gpu_specs g ON g.gpu_name = r.gpu_name
), per AS (
    SELECT k.run_id, k.rank, k.mode, sum(k.dur) AS kernel_ns, count(*) AS kernels, count(DISTINCT k.step) AS steps,
           arg_max(k.name, k.dur) AS longest_kernel
    FROM k WHERE k.mode IS NOT NULL
    GROUP BY k.run_id, k.rank, k.mode
)
SELECT p.run_id, p.rank, p.mode, p.kernels,
       round(p.kernel_ns / greatest(p.steps, 1) / 1e6, 3) AS ms_per_step,
       round(100 * p.kernel_ns / sp.span_ns, 2) AS pct_of_gpu_span,
       -- FP32 on the CUDA cores at the faster roofs (the same share of each peak)
       CASE WHEN p.mode = 'fp32' AND s.tf32_tflops > 0 THEN round(p.kernel_ns * s.fp32_tflops / s.tf32_tflops / greatest(p.steps, 1) / 1e6, 3) END AS ms_per_step_at_tf32,
       CASE WHEN p.mode = 'fp32' AND s.bf16_tflops > 0 THEN round(p.kernel_ns * s.fp32_tflops / s.bf16_tflops / greatest(p.steps, 1) / 1e6, 3) END AS ms_per_step_at_bf16,
       p.steps, p.longest_kernel
FROM per p
JOIN gpu_span sp ON sp.run_id = p.run_id AND sp.rank = p.rank
LEFT JOIN spec s ON s.run_id = p.run_id AND s.rank = p.rank
WHERE sp.span_ns > 0
ORDER BY p.run_id, p.rank, p.kernel_ns DESC
