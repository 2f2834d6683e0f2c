-- name: gpu_mem_full
-- category: memory
-- kind: finding
-- severity: warn
-- description: a GPU whose framebuffer was nearly full during the analysed steps (DCGM_FI_DEV_FB_USED against used + free + reserved, or NVML's memory info): at min_frac the caching allocator starts to free and retry (cudaMalloc retries, slower steps) and the next larger batch fails with out-of-memory. Counts every process on the GPU, not only the job's allocator
-- threshold: min_frac = 0.95  # used share of the framebuffer
-- fix: see what holds the memory: the allocator's reserved-but-unused memory (mem_reserved_unused, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation) or other processes on the GPU (nvidia-smi); lower the peak with activation checkpointing, a smaller micro-batch or sharded optimizer state
SELECT run_id, rank, subject,
       'fb_used_frac' AS metric,
       fb_used_frac AS value,
       $min_frac AS threshold,
       printf('rank %d''s GPU (%s) used up to %.1f%% of its framebuffer (%.1f GiB) during the steps',
              rank, subject, 100 * fb_used_frac, fb_used_max_mib / 1024) AS message,
       'allocation retries slow the steps near the peak; a little more memory per step fails with out-of-memory' AS impact,
       'gpu_counters fb_used_frac under the threshold' AS validation,
       'measured' AS confidence,
       json_object('fb_used_frac', fb_used_frac, 'fb_used_max_mib', fb_used_max_mib)::VARCHAR AS evidence
FROM metric_gpu_counters
WHERE fb_used_frac >= $min_frac
ORDER BY run_id, rank
