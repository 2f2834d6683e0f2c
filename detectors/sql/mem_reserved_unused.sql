-- name: mem_reserved_unused
-- category: memory
-- kind: finding
-- severity: warn
-- description: devices where the caching allocator holds much more memory than live tensors use, with how fragmented the free part is
-- threshold: min_unused_ratio = 0.25  # (reserved - allocated) / reserved
-- threshold: min_unused_bytes = 1073741824  # ignore less than this (1 GiB)
-- threshold: fragmented_pct = 50  # fragmentation above which the fix is about splitting
WITH m AS (
    SELECT run_id, rank, subject,
           max(reserved_bytes) AS reserved, max(allocated_bytes) AS allocated, max(unused_bytes) AS unused,
           max(largest_free_bytes) AS largest_free, max(fragmentation_pct) AS frag
    FROM metric_mem_summary
    GROUP BY run_id, rank, subject
)
SELECT run_id, rank, subject,
       'reserved_unused_ratio' AS metric,
       unused / reserved AS value,
       $min_unused_ratio AS threshold,
       printf('%s on rank %d: the allocator reserves %.2f GiB but live tensors use %.2f GiB; %.2f GiB is reserved and unused, %.0f%% fragmented (largest free block %.2f GiB)',
              subject, rank, reserved / 2^30, allocated / 2^30, unused / 2^30, frag, largest_free / 2^30) AS message,
       CASE WHEN frag >= $fragmented_pct
            THEN 'free memory is split into many small blocks: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (or max_split_size_mb) so freed blocks can be reused for large requests'
            ELSE 'memory is cached but not split: if other processes or a later phase need it, release it between phases with torch.cuda.empty_cache(), or lower the peak (activation checkpointing, smaller micro-batch)' END AS fix,
       printf('up to %.2f GiB for a larger micro-batch, longer sequences or fewer recomputed activations', unused / 2^30) AS impact,
       json_object('reserved_bytes', reserved, 'allocated_bytes', allocated, 'largest_free_bytes', largest_free, 'fragmentation_pct', round(frag, 2))::VARCHAR AS evidence
FROM m
WHERE reserved > 0 AND unused / reserved >= $min_unused_ratio AND unused >= $min_unused_bytes
ORDER BY run_id, rank, subject
