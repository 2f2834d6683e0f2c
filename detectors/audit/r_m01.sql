-- name: r_m01
-- category: config_memory
-- kind: finding
-- severity: warn
-- description: R-M01 optimizer CPU offload trio (--optimizer-cpu-offload, --overlap-cpu-optimizer-d2h-h2d, --use-precision-aware-optimizer) on a job whose optimizer states would fit on the GPUs with headroom to spare
-- threshold: min_headroom = 0.30  # fraction of GPU memory left free without the offload that makes the offload a waste
-- fix: remove --use-precision-aware-optimizer first, then --overlap-cpu-optimizer-d2h-h2d, and --optimizer-cpu-offload last
WITH trio AS (
    -- The memory budget decides: when the states do not fit without the
    -- offload it is the right call (perf-doctor: 35B-A3B on 4×H20), so the rule
    -- stays quiet; an author's NOTE downgrades it to info.
    SELECT run_id, arg_max(file, seq) AS file, max(line) AS line, arg_max("array", seq) AS arr, count(*) AS n
    FROM script_flags_effective
    WHERE flag IN ('--optimizer-cpu-offload', '--overlap-cpu-optimizer-d2h-h2d', '--use-precision-aware-optimizer')
    GROUP BY run_id
), notes AS (
    SELECT run_id, string_agg(note, ' / ') AS note FROM script_flag_notes
    WHERE flag IN ('--optimizer-cpu-offload', '--overlap-cpu-optimizer-d2h-h2d', '--use-precision-aware-optimizer')
    GROUP BY run_id
)
SELECT m.run_id, 'R-M01' AS subject, 'headroom_without_offload' AS metric,
       1 - m.total_no_offload_gib / m.mem_gib AS value, $min_headroom AS threshold,
       CASE WHEN n.note IS NOT NULL THEN 'info' END AS severity,
       printf('optimizer states are offloaded to the CPU, yet without the offload the estimate is %.1f GiB of %.0f GiB per GPU (%.0f%% free)',
              m.total_no_offload_gib, m.mem_gib, 100 * (1 - m.total_no_offload_gib / m.mem_gib)) AS message,
       printf('step time typically +30-60%% and MFU down while the optimizer step runs on the CPU; without the offload %.1f GiB/GPU (optimizer %.1f GiB = %.1fB params × 12 B / sharding) still leaves %.0f%% of %s free.',
              m.total_no_offload_gib, m.optim_full_gib, m.p_total / 1e9, 100 * (1 - m.total_no_offload_gib / m.mem_gib), m.gpu_name) AS impact,
       audit_evidence(m.script, t.file, t.line, '--optimizer-cpu-offload', NULL, t.arr, 'set',
                      'Optimizer CPU offload on a job that fits without it',
                      'the job does not fit without the offload (the memory budget says so), or a comment says it OOMs without it', n.note) AS evidence
FROM script_memory_budget m
JOIN trio t ON t.run_id = m.run_id AND t.n = 3
LEFT JOIN notes n ON n.run_id = m.run_id
WHERE m.mem_gib > 0 AND m.total_no_offload_gib IS NOT NULL
  AND 1 - m.total_no_offload_gib / m.mem_gib >= $min_headroom
