-- name: runtime_exposed
-- category: runtime
-- kind: finding
-- severity: warn
-- description: a rank whose CUDA runtime calls of one purpose (launch, synchronize, memcpy) run while its GPU has nothing to do for more than min_ratio of the GPU span: the GPU waits on the host inside these calls
-- threshold: min_ratio = 0.01  # exposed API time / GPU span (PerfTracker reports workers above 1%)
-- fix: launch: fewer, larger kernels (CUDA graphs, torch.compile, fused optimizers, larger batches); synchronize: remove .item()/.cpu()/.tolist() and explicit synchronizes from the step; memcpy: pinned memory and non_blocking copies issued ahead of use
SELECT m.run_id, m.rank, m.subject,
       'runtime_exposed_ratio' AS metric,
       m.bottleneck_pct / 100 AS value,
       $min_ratio AS threshold,
       printf('rank %d: %s calls keep the GPU waiting for %s (%.1f%% of the GPU span): %d calls, %s of host time, during %s of which no GPU work ran',
              m.rank, m.subject, fmt_ns(m.exposed_ns), m.bottleneck_pct, m.calls::BIGINT, fmt_ns(m.host_ns), fmt_ns(m.exposed_ns)) AS message,
       CASE m.subject WHEN 'launch' THEN 'remove host launch overhead: fewer, larger kernels (CUDA graphs, torch.compile), fused optimizers, larger micro-batches'
                      -- the same words as sync_api's fix, so that the report gives it once
                      WHEN 'synchronize' THEN 'remove synchronization from the step: no .item() / .cpu() / print of tensors per step, no torch.cuda.synchronize() outside timing code; record events and check them later instead'
                      WHEN 'memcpy' THEN 'pin host memory and issue non_blocking copies ahead of use (DataLoader pin_memory=True, prefetching)'
                      ELSE 'look at which runtime calls these are (cpu_top_ops) and why the host makes them in the step' END AS fix,
       printf('up to %s of GPU time per window', fmt_ns(m.exposed_ns)) AS impact,
       printf('runtime_api exposed_ns for %s on rank %d', m.subject, m.rank) AS validation,
       'measured' AS confidence,
       json_object('calls', m.calls, 'host_ns', m.host_ns, 'exposed_ns', m.exposed_ns, 'bottleneck_pct', m.bottleneck_pct)::VARCHAR AS evidence
FROM (
    SELECT run_id, rank, subject,
           max(calls) AS calls, max(host_ns) AS host_ns, max(exposed_ns) AS exposed_ns, max(bottleneck_pct) AS bottleneck_pct
    FROM metric_runtime_api
    GROUP BY run_id, rank, subject
) m
WHERE m.bottleneck_pct / 100 >= $min_ratio AND m.subject <> 'other'
ORDER BY m.run_id, m.rank, m.exposed_ns DESC
