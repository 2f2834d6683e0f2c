-- name: host_exposed_ops
-- category: cpu
-- kind: finding
-- severity: warn
-- description: per rank, the call stacks of Python functions and CPU operators (host_exposed) whose own time runs while the GPU has nothing to do for more than min_ratio of the GPU span each (PerfTracker reports those above 1%): the host is the bottleneck there
-- threshold: min_ratio = 0.01  # exposed self time / GPU span, per call stack
-- fix: move the work off the step's critical path or make it cheaper: prefetch and preprocess data in DataLoader workers, precompute what is recomputed every step, fuse many small operators (torch.compile), avoid Python loops over tensors; where the exposed time is a wrapper (an annotation or module call), look at what runs inside it
-- shows: data_loader, gc, checkpoint, host, input
WITH m AS (
    SELECT run_id, rank, subject,
           max(exposed_self_ns) AS exposed_ns, max(exposed_pct) AS exposed_pct
    FROM metric_host_exposed
    GROUP BY run_id, rank, subject
), over AS (
    SELECT * FROM m WHERE exposed_pct / 100 >= $min_ratio
)
SELECT run_id, rank,
       'exposed_host_ratio' AS metric,
       max(exposed_pct) / 100 AS value,
       $min_ratio AS threshold,
       printf('rank %d: %d host call stack(s) each keep the GPU idle for more than %.0f%% of its span; most: %s',
              rank, count(*)::BIGINT, 100 * $min_ratio,
              string_agg(printf('%s %s (%.1f%%)', subject, fmt_ns(exposed_ns), exposed_pct), '; ' ORDER BY exposed_ns DESC, subject)) AS message,
       printf('up to %s of GPU time per window on rank %d', fmt_ns(sum(exposed_ns)), rank) AS impact,
       'host_exposed exposed_self_ns of these stacks' AS validation,
       'measured' AS confidence,
       json_object('stacks', count(*), 'exposed_ns', sum(exposed_ns), 'top', list(subject ORDER BY exposed_ns DESC, subject)[1])::VARCHAR AS evidence
FROM over
GROUP BY run_id, rank
ORDER BY run_id, rank
