-- name: sync_api
-- category: sync
-- kind: finding
-- severity: warn
-- description: ranks whose host spends at least the threshold share of the GPU span in synchronizing API calls (device, stream and event synchronize), as Nsight Systems' cuda_api_sync rule flags
-- threshold: min_ratio = 0.01  # time in synchronizing calls / GPU span
-- fix: remove synchronization from the step: no .item() / .cpu() / print of tensors per step, no torch.cuda.synchronize() outside timing code; record events and check them later instead
WITH s AS (
    SELECT run_id, rank, sum(calls) AS calls, sum(total_ns) AS sync_ns, first(name ORDER BY longest_ns DESC, name) AS longest_call, max(longest_ns) AS longest_ns
    FROM host_op_time
    WHERE kind IN ('runtime', 'driver')
      AND name IN ('cudaDeviceSynchronize', 'cudaStreamSynchronize', 'cudaEventSynchronize', 'cuCtxSynchronize',
                   'cuStreamSynchronize', 'cuEventSynchronize', 'hipDeviceSynchronize', 'hipStreamSynchronize', 'hipEventSynchronize')
    GROUP BY run_id, rank
)
SELECT s.run_id, s.rank,
       'sync_api_ratio' AS metric,
       s.sync_ns / sp.span_ns AS value,
       $min_ratio AS threshold,
       printf('rank %d: %d synchronizing calls hold the host for %s (%.1f%% of the GPU span); the longest, %s, took %s',
              s.rank, s.calls, fmt_ns(s.sync_ns), 100 * s.sync_ns / sp.span_ns, s.longest_call, fmt_ns(s.longest_ns)) AS message,
       printf('the host launches ahead again: up to %s a window', fmt_ns(s.sync_ns)) AS impact,
       json_object('calls', s.calls, 'sync_ns', s.sync_ns, 'longest_ns', s.longest_ns)::VARCHAR AS evidence
FROM s JOIN gpu_span sp ON sp.run_id = s.run_id AND sp.rank = s.rank
WHERE s.sync_ns / sp.span_ns >= $min_ratio
ORDER BY s.run_id, s.rank
