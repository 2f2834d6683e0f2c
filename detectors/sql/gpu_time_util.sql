-- name: gpu_time_util
-- category: utilization
-- kind: finding
-- severity: warn
-- description: equal slices of each rank's GPU span in which the GPU is busy less than the threshold share of the time (Nsight Systems' gpu_time_util rule): where in the window utilization drops, not just how much
-- threshold: chunks = 20  # slices of the span
-- threshold: min_util_pct = 50  # a slice below this utilization is low
-- fix: find what the host does during the low slices (the timestamps are in the evidence): data loading, evaluation, checkpointing, logging or a synchronizing call, and overlap or move it
-- symptom: idle
WITH u AS (
    SELECT run_id, rank, start_ns AS s, end_ns AS e FROM gpu_busy
), c AS (
    SELECT sp.run_id, sp.rank, r.i AS chunk,
           sp.start_ns + (r.i * sp.span_ns) // $chunks::BIGINT AS cs,
           sp.start_ns + ((r.i + 1) * sp.span_ns) // $chunks::BIGINT AS ce
    FROM gpu_span sp, range(0, $chunks::BIGINT) r(i)
    WHERE sp.span_ns > 0
), b AS (
    SELECT c.run_id, c.rank, c.chunk, c.cs, c.ce,
           coalesce(sum(least(u.e, c.ce) - greatest(u.s, c.cs)), 0) AS busy
    FROM c LEFT JOIN u ON u.run_id = c.run_id AND u.rank = c.rank AND u.s < c.ce AND u.e > c.cs
    GROUP BY c.run_id, c.rank, c.chunk, c.cs, c.ce
), low AS (
    SELECT *, 100.0 * busy / (ce - cs) AS util FROM b WHERE ce > cs AND 100.0 * busy / (ce - cs) < $min_util_pct
)
SELECT low.run_id, low.rank,
       'low_utilization_slices' AS metric,
       count(*) AS value,
       $min_util_pct AS threshold,
       printf('rank %d: %d of %d equal slices of the GPU span (%s each) ran below %.0f%% utilization; the lowest, %.1f%%, starts %s into the span',
              low.rank, count(*), $chunks::BIGINT, fmt_ns(any_value(low.ce - low.cs)), $min_util_pct,
              min(low.util), fmt_ns(arg_min(low.cs, (low.util, low.cs)) - any_value(sp.start_ns))) AS message,
       json_object('low_slices', count(*), 'slices', $chunks, 'lowest_util_pct', round(min(low.util), 2),
                   'lowest_slice_start_ns', arg_min(low.cs, (low.util, low.cs)))::VARCHAR AS evidence
FROM low JOIN gpu_span sp ON sp.run_id = low.run_id AND sp.rank = low.rank
GROUP BY low.run_id, low.rank
ORDER BY low.run_id, low.rank
