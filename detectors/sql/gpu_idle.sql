-- name: gpu_idle
-- category: utilization
-- kind: finding
-- severity: warn
-- description: ranks whose GPU sits idle for at least the threshold share of its active span, with what the gaps wait on (host launches, short kernel-to-kernel gaps, other)
-- threshold: max_idle_ratio = 0.20  # idle time / GPU span
-- symptom: idle
WITH t AS (
    SELECT run_id, rank,
           max(idle_ns) AS idle_ns, max(span_ns) AS span_ns, max(idle_pct) AS idle_pct
    FROM metric_temporal_breakdown
    GROUP BY run_id, rank
), ib AS (
    SELECT run_id, rank,
           sum(host_wait_ns) AS host_wait_ns, sum(kernel_wait_ns) AS kernel_wait_ns, sum(other_ns) AS other_ns
    FROM metric_idle_breakdown
    GROUP BY run_id, rank
), j AS (
    SELECT t.*, coalesce(ib.host_wait_ns, 0) AS hw, coalesce(ib.kernel_wait_ns, 0) AS kw, coalesce(ib.other_ns, 0) AS ot,
           greatest(coalesce(ib.host_wait_ns, 0) + coalesce(ib.kernel_wait_ns, 0) + coalesce(ib.other_ns, 0), 1) AS gaps
    FROM t LEFT JOIN ib ON ib.run_id = t.run_id AND ib.rank = t.rank
)
SELECT run_id, rank,
       'gpu_idle_ratio' AS metric,
       idle_pct / 100 AS value,
       $max_idle_ratio AS threshold,
       CASE WHEN idle_pct / 100 >= 2 * $max_idle_ratio THEN 'critical' END AS severity,
       printf('rank %d: the GPU is idle %.1f%% of its active span (%s of %s); of the gaps on its streams %.0f%% wait for the host to launch, %.0f%% are short kernel-to-kernel gaps, %.0f%% other',
              rank, idle_pct, fmt_ns(idle_ns), fmt_ns(span_ns), 100 * hw / gaps, 100 * kw / gaps, 100 * ot / gaps) AS message,
       CASE greatest(hw, kw, ot)
           WHEN hw THEN 'the CPU does not launch work fast enough: cut per-step Python and framework overhead, capture steady steps in CUDA graphs (torch.compile mode="reduce-overhead"), and keep data loading off the critical path (pin_memory, more DataLoader workers, prefetch)'
           WHEN kw THEN 'many tiny back-to-back kernels: fuse them (torch.compile, fused optimizers and norms) or give each kernel more work (larger micro-batch)'
           ELSE 'the GPU waits on something other than launches: look for synchronizing calls (cudaStreamSynchronize, .item(), .cpu()), cross-stream waits and host-device copies in the step'
       END AS fix,
       printf('up to %s of GPU time (%.1f%% of the span) becomes available for work', fmt_ns(idle_ns), idle_pct) AS impact,
       -- gap times are summed per stream, so they can exceed the rank's idle time
       json_object('idle_ns', idle_ns, 'span_ns', span_ns, 'stream_gap_host_wait_ns', hw, 'stream_gap_kernel_wait_ns', kw, 'stream_gap_other_ns', ot)::VARCHAR AS evidence
FROM j
WHERE idle_pct / 100 >= $max_idle_ratio
ORDER BY run_id, rank
