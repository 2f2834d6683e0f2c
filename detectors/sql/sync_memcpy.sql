-- name: sync_memcpy
-- category: sync
-- kind: finding
-- severity: warn
-- description: synchronous memory copies and sets (cudaMemcpy, cudaMemset and their HIP twins) in the analysis window: each blocks the host until the device is done, as Nsight Systems' cuda_memcpy_sync and cuda_memset_sync rules flag
-- threshold: min_calls = 1  # report a rank with at least this many calls
-- fix: use cudaMemcpyAsync / cudaMemsetAsync on a stream (in PyTorch: tensor.to(device, non_blocking=True) from pinned memory, and avoid .item(), .cpu() and .tolist() inside the step)
-- shows: sync, copies
SELECT run_id, rank,
       'sync_memcpy_calls' AS metric,
       sum(calls) AS value,
       $min_calls AS threshold,
       printf('rank %d: %d synchronous copy/set calls (%s) blocked the host for %s', rank, sum(calls)::BIGINT,
              string_agg(DISTINCT name, ', ' ORDER BY name), fmt_ns(sum(total_ns))) AS message,
       printf('up to %s of host time per window, and the GPU idle time the blocking causes', fmt_ns(sum(total_ns))) AS impact,
       json_object('calls', sum(calls), 'total_ns', sum(total_ns), 'longest_ns', max(longest_ns))::VARCHAR AS evidence
FROM host_op_time
WHERE kind IN ('runtime', 'driver')
  AND name IN ('cudaMemcpy', 'cudaMemset', 'cudaMemcpy2D', 'cudaMemcpyToSymbol', 'cudaMemcpyFromSymbol',
               'cuMemcpyHtoD_v2', 'cuMemcpyDtoH_v2', 'hipMemcpy', 'hipMemset', 'hipMemcpyWithStream')
GROUP BY run_id, rank
HAVING sum(calls) >= $min_calls
ORDER BY run_id, rank
