-- name: sync_api
-- category: sync
-- kind: finding
-- severity: warn
-- description: ranks whose synchronizing calls cost at least the threshold share of the GPU span in GPU idle: the host blocks until the GPU drains (device, stream and event synchronize, blocking copies, .item()), and the GPU then waits for the host to launch again (the step-time account's idle/sync). Host time in a synchronizing call while the GPU is busy costs nothing and is not counted: Nsight Systems' cuda_api_sync rule flags that too
-- threshold: min_ratio = 0.01  # GPU idle after synchronizing calls / GPU span
-- fix: remove synchronization from the step: no .item() / .cpu() / print of tensors per step, no torch.cuda.synchronize() outside timing code; record events and check them later instead
-- shows: sync
WITH idle AS (
    -- the GPU idle synchronizing calls caused, in the window's steps
    SELECT a.run_id, a.rank, sum(a.ns) AS idle_ns, sum(a.intervals) AS drains,
           arg_max(a.subject, a.ns) AS top_subject
    FROM step_account a
    JOIN analysis_window w ON w.run_id = a.run_id AND w.rank = a.rank
    WHERE a.category = 'idle' AND a.cause = 'sync'
      AND (w.step_lo IS NULL OR a.step >= w.step_lo) AND (w.step_hi IS NULL OR a.step <= w.step_hi)
    GROUP BY a.run_id, a.rank
), calls AS (
    SELECT run_id, rank, sum(calls) AS calls, sum(total_ns) AS sync_ns, first(name ORDER BY longest_ns DESC, name) AS longest_call, max(longest_ns) AS longest_ns
    FROM host_op_time
    WHERE kind IN ('runtime', 'driver')
      AND name IN ('cudaDeviceSynchronize', 'cudaStreamSynchronize', 'cudaEventSynchronize', 'cuCtxSynchronize',
                   'cuStreamSynchronize', 'cuEventSynchronize', 'hipDeviceSynchronize', 'hipStreamSynchronize', 'hipEventSynchronize')
    GROUP BY run_id, rank
)
SELECT i.run_id, i.rank,
       'sync_api_ratio' AS metric,
       i.idle_ns / sp.span_ns AS value,
       $min_ratio AS threshold,
       printf('rank %d: synchronizing calls leave the GPU idle %s (%.1f%% of the GPU span) in %d stretch(es), the most after %s',
              i.rank, fmt_ns(i.idle_ns), 100 * i.idle_ns / sp.span_ns, i.drains, coalesce(i.top_subject, 'a call'))
       || CASE WHEN c.calls > 0 THEN printf('; the host spends %s in %d synchronize calls, busy GPU or not', fmt_ns(c.sync_ns), c.calls) ELSE '' END AS message,
       printf('the GPU keeps working while the host goes on: up to %s a window', fmt_ns(i.idle_ns)) AS impact,
       json_object('stretches', i.drains, 'idle_ns', i.idle_ns, 'calls', coalesce(c.calls, 0), 'sync_ns', coalesce(c.sync_ns, 0),
                   'longest_call', c.longest_call, 'longest_ns', c.longest_ns, 'top', i.top_subject)::VARCHAR AS evidence
FROM idle i
JOIN gpu_span sp ON sp.run_id = i.run_id AND sp.rank = i.rank
LEFT JOIN calls c ON c.run_id = i.run_id AND c.rank = i.rank
WHERE i.idle_ns / sp.span_ns >= $min_ratio
ORDER BY i.run_id, i.rank
