-- name: mem_growth
-- category: memory
-- kind: finding
-- severity: warn
-- description: ranks whose peak allocated or reserved memory grows at every step of the trace (a leak suspicion: tensors kept across steps, a growing cache, lists of losses that hold graphs)
-- threshold: min_steps = 3  # steps needed to call it growth
-- threshold: min_growth_bytes = 268435456  # total growth to report (256 MiB)
-- fix: find what keeps memory across steps: tensors appended to Python lists (store loss.item(), not loss), graphs kept by retain_graph, caches keyed by shape; compare allocation sites between two snapshots taken steps apart (trainscope profile --memory)
WITH m AS (
    SELECT run_id, rank, subject, step_lo AS step, 'peak_allocated_bytes' AS metric, peak_allocated_bytes AS value
    FROM metric_mem_step_peaks
    UNION ALL
    SELECT run_id, rank, subject, step_lo, 'peak_reserved_bytes', peak_reserved_bytes
    FROM metric_mem_step_peaks
), g AS (
    SELECT run_id, rank, subject, metric,
           count(*) AS steps,
           arg_max(value, step) - arg_min(value, step) AS growth,
           bool_and(value >= prev) FILTER (WHERE prev IS NOT NULL) AS never_drops,
           bool_or(value > prev) FILTER (WHERE prev IS NOT NULL) AS rises,
           min(step) AS first_step, max(step) AS last_step,
           arg_min(value, step) AS first_value, arg_max(value, step) AS last_value
    FROM (SELECT *, lag(value) OVER (PARTITION BY run_id, rank, subject, metric ORDER BY step) AS prev FROM m)
    GROUP BY run_id, rank, subject, metric
)
SELECT run_id, rank, first_step AS step_lo, last_step AS step_hi, subject,
       replace(metric, 'peak_', 'growth_') AS metric,
       growth AS value,
       $min_growth_bytes AS threshold,
       printf('rank %d %s: %s grows at every step, from %.2f GiB at step %d to %.2f GiB at step %d (+%.0f MiB over %d steps)',
              rank, subject, replace(replace(metric, '_bytes', ''), '_', ' '), first_value / 2^30, first_step,
              last_value / 2^30, last_step, growth / 2^20, steps::BIGINT) AS message,
       'hypothesis' AS confidence,
       'two memory snapshots a few steps apart (torch.cuda.memory._snapshot()), to compare allocation sites' AS needs,
       printf('memory stays flat across steps instead of growing %.0f MiB every %d steps', growth / 2^20, steps::BIGINT - 1) AS impact,
       json_object('steps', steps, 'first_bytes', first_value, 'last_bytes', last_value)::VARCHAR AS evidence
FROM g
WHERE steps >= $min_steps AND never_drops AND rises AND growth >= $min_growth_bytes
ORDER BY run_id, rank, subject, metric
