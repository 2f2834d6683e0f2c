-- name: mem_settings
-- category: memory
-- kind: finding
-- severity: info
-- description: the caching allocator's settings in force when the snapshot was taken (PYTORCH_CUDA_ALLOC_CONF, expandable segments, max split size, garbage collection threshold), so that memory findings can be read against them
SELECT run_id, rank,
       'allocator_settings' AS metric,
       count(*) AS value,
       'allocator settings: ' || string_agg(key || '=' || value, ', ' ORDER BY key) AS message
FROM mem_settings
WHERE key IN ('PYTORCH_CUDA_ALLOC_CONF', 'expandable_segments', 'max_split_size', 'garbage_collection_threshold',
              'release_lock_on_cudamalloc', 'pinned_use_cuda_host_register')
GROUP BY run_id, rank
ORDER BY run_id, rank
