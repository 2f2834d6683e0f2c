-- name: abnormal_util
-- category: utilization
-- kind: finding
-- severity: warn
-- description: a rank whose GPU compute utilization is far below its peers' (robust z-score over the run's ranks): it computes less of its span than the others, so it waits, stalls or does extra non-compute work
-- threshold: min_z = 3.0  # how far below the median, in robust z-score
-- threshold: min_gap_pct = 5  # and at least this many percentage points below the median
-- threshold: min_ranks = 3  # fewer ranks cannot single one out
-- fix: compare the rank's temporal_breakdown, idle_breakdown and comm_comp_overlap with a peer's: more idle points at its host (data loading, synchronization), more exposed communication at the collectives it waits in (a straggler elsewhere, or its link)
-- symptom: idle
WITH u AS (
    SELECT run_id, rank, max(compute_pct) AS util
    FROM metric_temporal_breakdown WHERE rank IS NOT NULL
    GROUP BY run_id, rank
), m AS (
    SELECT run_id, median(util) AS med, count(*) AS ranks FROM u GROUP BY run_id
), d AS (
    SELECT u.run_id, greatest(median(abs(u.util - m.med)), 1.0) AS mad FROM u JOIN m ON m.run_id = u.run_id GROUP BY u.run_id
)
SELECT u.run_id, u.rank,
       'compute_util_pct' AS metric,
       u.util AS value,
       m.med - $min_gap_pct AS threshold,
       printf('rank %d computes %.1f%% of its GPU span while the median rank computes %.1f%% (robust z %.1f over %d ranks)',
              u.rank, u.util, m.med, robust_z(u.util, m.med, d.mad), m.ranks) AS message,
       printf('up to %.1f percentage points of compute utilization on rank %d', m.med - u.util, u.rank) AS impact,
       'temporal_breakdown compute_pct of this rank back near the median' AS validation,
       'measured' AS confidence,
       json_object('compute_pct', u.util, 'median_pct', m.med, 'robust_z', robust_z(u.util, m.med, d.mad), 'ranks', m.ranks)::VARCHAR AS evidence
FROM u JOIN m ON m.run_id = u.run_id JOIN d ON d.run_id = u.run_id
WHERE m.ranks >= $min_ranks
  AND robust_z(u.util, m.med, d.mad) <= -$min_z
  AND m.med - u.util >= $min_gap_pct
ORDER BY u.run_id, u.util
