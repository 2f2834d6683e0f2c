-- name: mem_ops_exposed
-- category: memory_ops
-- kind: finding
-- severity: warn
-- description: ranks where one kind of GPU memory operation, outside any compute, takes at least the threshold share of the GPU span (PerfTracker's workers above 1%)
-- threshold: min_pct = 1  # exposed time / GPU span, in percent
WITH m AS (
    SELECT run_id, rank, subject,
           max(exposed_ns) AS exposed_ns, max(bottleneck_pct) AS pct, max(ops) AS ops,
           max(moved_bytes) AS moved, max(achieved_gbps) AS gbps
    FROM metric_mem_ops
    GROUP BY run_id, rank, subject
)
SELECT run_id, rank, subject,
       'mem_op_bottleneck_pct' AS metric,
       pct AS value,
       $min_pct AS threshold,
       printf('rank %d: %s runs %s with no compute beside it (%.2f%% of the GPU span): %d operations moving %s at %.1f GB/s',
              rank, subject, fmt_ns(exposed_ns), pct, ops::BIGINT, fmt_bytes(moved), gbps) AS message,
       CASE WHEN subject IN ('Memcpy HtoD', 'Memcpy DtoH')
            THEN 'overlap host-device copies with compute: pinned memory and non_blocking=True copies on a side stream, prefetch the next batch while this one computes, keep tensors on the GPU between steps'
            WHEN subject = 'Memset' THEN 'avoid zero-filling large buffers each step: torch.empty instead of torch.zeros where the buffer is overwritten, set_to_none=True in zero_grad'
            ELSE 'device-to-device copies come from layout changes and .contiguous()/.clone() calls: fuse or remove them (torch.compile), or keep tensors in the layout the next kernel wants' END AS fix,
       printf('up to %s of GPU time a window', fmt_ns(exposed_ns)) AS impact,
       json_object('exposed_ns', exposed_ns, 'ops', ops, 'moved_bytes', moved, 'achieved_gbps', round(gbps, 2))::VARCHAR AS evidence
FROM m
WHERE pct >= $min_pct
ORDER BY run_id, rank, pct DESC
