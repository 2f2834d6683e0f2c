-- Trace diff: kernels (GPU) and operators (host) of run $new against run
-- $base, per iteration and rank of each run's analysis window. Parameters
-- are replaced as literals by Diff ($base, $new, $n_base and $n_new: each
-- run's iterations times ranks, $min_ratio, $min_delta_ns, $top).
WITH gpu AS (
    SELECT run_id, 'gpu:' || kind AS kind, name, dur, step FROM gpu_window WHERE run_id IN ($base, $new)
), host AS (
    SELECT run_id, 'host:' || kind AS kind, name, dur, step FROM host_window
    WHERE run_id IN ($base, $new) AND kind IN ('cpu_op', 'python', 'runtime', 'driver')
), iters AS (
    -- iterations times ranks of each run: rows are per iteration and rank
    SELECT $base AS run_id, $n_base AS n UNION ALL SELECT $new, $n_new
), per AS (
    SELECT a.run_id, a.kind, a.name, count(*) / any_value(i.n) AS calls, avg(a.dur) AS mean_ns,
           sum(a.dur) / any_value(i.n) AS ns_per_step
    FROM (SELECT * FROM gpu UNION ALL SELECT * FROM host) a JOIN iters i ON i.run_id = a.run_id
    GROUP BY a.run_id, a.kind, a.name
), j AS (
    SELECT coalesce(b.kind, n.kind) AS kind, coalesce(b.name, n.name) AS name,
           coalesce(b.calls, 0) AS base_calls, coalesce(n.calls, 0) AS new_calls,
           coalesce(b.mean_ns, 0) AS base_mean, coalesce(n.mean_ns, 0) AS new_mean,
           coalesce(n.ns_per_step, 0) - coalesce(b.ns_per_step, 0) AS delta
    FROM (SELECT * FROM per WHERE run_id = $base) b
    FULL OUTER JOIN (SELECT * FROM per WHERE run_id = $new) n ON n.kind = b.kind AND n.name = b.name
), c AS (
    SELECT *,
           -- the larger of the two factors (duration or call rate) names the change
           CASE WHEN base_calls = 0 THEN 'added'
                WHEN new_calls = 0 THEN 'removed'
                WHEN abs(ln(greatest(new_calls, 1e-9) / base_calls)) >= abs(ln(greatest(new_mean, 1e-9) / greatest(base_mean, 1e-9))) THEN
                    CASE WHEN new_calls >= base_calls * $min_ratio THEN 'more_frequent'
                         WHEN base_calls >= new_calls * $min_ratio THEN 'less_frequent' END
                ELSE
                    CASE WHEN new_mean >= base_mean * $min_ratio THEN 'slower'
                         WHEN base_mean >= new_mean * $min_ratio THEN 'faster' END
           END AS change
    FROM j
)
SELECT kind, name, change, base_calls, new_calls, base_mean, new_mean, delta
FROM c
WHERE change IS NOT NULL AND abs(delta) >= $min_delta_ns
ORDER BY abs(delta) DESC, kind, name
LIMIT $top
