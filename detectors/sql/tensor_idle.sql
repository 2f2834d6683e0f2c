-- name: tensor_idle
-- category: compute
-- kind: finding
-- severity: info
-- description: matmul kernels that leave the tensor cores idle, from the counters: DCGM's tensor-pipe activity (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, a profiling field) over the steps divided by the share of the GPU span matmul kernels take (mfu's matmul_time_pct) is how busy the tensor pipe is while matmuls run; under min_active they run on the CUDA cores or starve on memory
-- threshold: min_active = 0.20  # tensor-pipe activity while matmul kernels run
-- threshold: min_matmul_pct = 20  # only where matmuls take this share (%) of the span
-- fix: run matmuls in bf16/fp16 (autocast) or allow TF32 for fp32 (torch.backends.cuda.matmul.allow_tf32 = True, torch.set_float32_matmul_precision('high')); pad dimensions to multiples of 16 (better 64) so cuBLAS picks tensor-core kernels; if they do use tensor cores, small or skinny shapes starve them: fuse or batch the matmuls
WITH m AS (
    SELECT run_id, rank, max(matmul_time_pct) AS mm_pct
    FROM metric_mfu GROUP BY run_id, rank
)
SELECT c.run_id, c.rank, c.subject,
       'tensor_active_in_matmul' AS metric,
       least(c.tensor_active / (m.mm_pct / 100), 1) AS value,
       $min_active AS threshold,
       printf('rank %d''s tensor pipe is active %.0f%% of the time its matmul kernels run (DCGM tensor activity %.1f%% of the steps; matmuls take %.0f%% of the GPU span)',
              c.rank, 100 * least(c.tensor_active / (m.mm_pct / 100), 1), 100 * c.tensor_active, m.mm_pct) AS message,
       'matmuls on tensor cores run several times faster than on CUDA cores (bf16 989 against fp32 67 TFLOP/s on an H100)' AS impact,
       'tensor_active over matmul share above the threshold' AS validation,
       CASE WHEN c.in_window = 1 THEN 'measured' ELSE 'inferred' END AS confidence,
       json_object('tensor_active', c.tensor_active, 'matmul_time_pct', m.mm_pct)::VARCHAR AS evidence
FROM metric_gpu_counters c JOIN m ON m.run_id = c.run_id AND m.rank = c.rank
WHERE c.tensor_active IS NOT NULL AND m.mm_pct >= $min_matmul_pct AND c.tensor_active / (m.mm_pct / 100) < $min_active
ORDER BY c.run_id, c.rank
