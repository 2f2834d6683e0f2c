-- name: gpu_clock_cap
-- category: hardware
-- kind: finding
-- severity: warn
-- description: GPUs held below their clocks by a power or thermal cap during the analysed steps: a slowing clock event reason (SW power cap, thermal or hardware slowdown, power brake) in min_share of a rank's samples, or power at its limit in min_share of them; one finding per run when at least min_ranks_share of its GPUs are capped, naming them and what capped them. Unlike gpu_throttle this needs no slower peer: a cap across the job slows every rank evenly, and no peer comparison shows it (a cap on one GPU whose kernels fall behind is gpu_throttle's; one whose kernels keep pace costs nothing)
-- threshold: min_share = 0.25  # a cap in this share of the rank's samples
-- threshold: min_ranks_share = 0.5  # this share of the run's GPUs capped
-- fix: a power cap on every GPU while they compute is the GPU working at its limit (normal for dense matmuls; a lower limit than the GPU's default, nvidia-smi -q -d POWER, is not); thermal slowdowns mean cooling: check inlet temperature, fans and airflow of the named hosts; HW slowdown or power brake is a signal from the board or chassis (power supply): have the node checked
-- shows: throttle
-- evidence: slow_host
WITH capped AS (
    -- capped: the larger of the two shares, the rank's worst
    SELECT *, greatest(coalesce(throttle_share, 0), coalesce(power_at_limit_share, 0)) AS capped
    FROM metric_gpu_counters
    WHERE coalesce(throttle_share, 0) >= $min_share OR coalesce(power_at_limit_share, 0) >= $min_share
), n AS (
    SELECT run_id, count(*) AS ranks FROM metric_gpu_counters GROUP BY run_id
)
SELECT x.run_id,
       CASE WHEN count(*) = 1 THEN min(x.rank) END AS rank,
       printf('ranks %s', list_sort(list(x.rank))) AS subject,
       'capped_share' AS metric,
       max(x.capped) AS value,
       $min_share AS threshold,
       printf('%d of %d GPUs run capped during the steps: %s (worst: %s, %s in %.0f%% of its samples%s)',
              count(*), any_value(n.ranks),
              clock_reasons_text(bit_or(coalesce(x.throttle_reasons, 0)::UBIGINT) | CASE WHEN max(coalesce(x.power_at_limit_share, 0)) >= $min_share THEN 4 ELSE 0 END),
              arg_max(x.subject, x.capped),
              arg_max(CASE WHEN coalesce(x.throttle_share, 0) >= coalesce(x.power_at_limit_share, 0) THEN clock_reasons_text(coalesce(x.throttle_reasons, 0)::UBIGINT) ELSE 'power at its limit' END,
                      x.capped),
              100 * max(x.capped),
              coalesce(printf(', up to %.0f °C', max(x.temp_max_c)), '')) AS message,
       'the capped GPUs run below their boost clock for that share of the steps; every rank waits for the slowest at each collective' AS impact,
       'gpu_counters throttle_share and power_at_limit_share under the threshold on every rank' AS validation,
       CASE WHEN min(x.in_window) = 1 THEN 'measured' ELSE 'inferred' END AS confidence,
       json_object('ranks', list_sort(list(x.rank)), 'of_ranks', any_value(n.ranks),
                   'reasons', clock_reasons_text(bit_or(coalesce(x.throttle_reasons, 0)::UBIGINT)),
                   'max_share', max(x.capped),
                   'temp_max_c', max(x.temp_max_c), 'power_w', max(x.power_w), 'power_limit_w', max(x.power_limit_w))::VARCHAR AS evidence
FROM capped x JOIN n ON n.run_id = x.run_id
GROUP BY x.run_id
HAVING count(*) >= $min_ranks_share * any_value(n.ranks)
ORDER BY x.run_id
