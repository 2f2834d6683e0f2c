-- name: gpu_throttle
-- category: hardware
-- kind: finding
-- severity: warn
-- description: a rank whose GPU runs at a lower SM clock than the run's other GPUs (by min_drop), or reports a slowing clock event reason (power cap, thermal, hardware slowdown) in min_share of its samples, while its compute kernels run slower than the same kernels on its peers (kernel_speed, by min_slowdown): the counters say why the rank is slow. A GPU that throttles while its kernels keep pace is not reported here (see gpu_clock_cap)
-- threshold: min_drop = 0.10  # SM clock this much below the run's median (0.10 = 10%)
-- threshold: min_share = 0.25  # or a slowing reason in this share of the rank's samples
-- threshold: min_slowdown = 0.05  # and its compute kernels this much slower than its peers'
-- fix: cool or power the GPU back to its clocks: check its temperature and fans or airflow (thermal), its power limit against its peers' (nvidia-smi -q -d POWER,PERFORMANCE, a lowered limit or a power-brake signal from the chassis), and the node's other GPUs; if it persists, drain the node and have the GPU serviced
-- shows: throttle, slow_host
-- evidence: late_rank, slow_host
WITH k AS (
    SELECT run_id, rank,
           max(slowdown) AS slowdown, max(extra_ns) AS extra_ns
    FROM metric_kernel_speed
    GROUP BY run_id, rank
)
SELECT c.run_id, c.rank, r.host, c.subject,
       'sm_clock_drop' AS metric,
       coalesce(c.clock_drop, 0) AS value,
       $min_drop AS threshold,
       printf('rank %d''s GPU (%s) throttles: %s%s; its compute kernels run %.0f%% slower than its peers'' (%s more GPU time in the window), so the counters explain its slowness',
              c.rank, c.subject,
              CASE WHEN c.clock_drop >= $min_drop
                   THEN printf('SM clock %.0f MHz against the run''s median %.0f MHz (-%.0f%%)', c.sm_clock_mhz, c.run_sm_clock_mhz, 100 * c.clock_drop)
                   ELSE printf('SM clock %.0f MHz (run median %.0f MHz)', c.sm_clock_mhz, c.run_sm_clock_mhz) END,
              CASE WHEN coalesce(c.throttle_share, 0) > 0
                   THEN printf(', %s in %.0f%% of its samples', clock_reasons_text(c.throttle_reasons::UBIGINT), 100 * c.throttle_share) ELSE '' END
                || CASE WHEN c.temp_max_c IS NOT NULL THEN printf(', up to %.0f °C', c.temp_max_c) ELSE '' END
                || CASE WHEN c.power_w IS NOT NULL AND c.power_limit_w IS NOT NULL THEN printf(', %.0f W of a %.0f W limit', c.power_w, c.power_limit_w) ELSE '' END,
              100 * (k.slowdown - 1), fmt_ns(k.extra_ns)) AS message,
       printf('up to %s of compute per window on rank %d, and the waiting it causes its peers', fmt_ns(k.extra_ns), c.rank) AS impact,
       'gpu_counters clock_drop under the threshold and no slowing reason, with kernel_speed slowdown back near 1.00' AS validation,
       CASE WHEN c.in_window = 1 THEN 'measured' ELSE 'inferred' END AS confidence,
       json_object('sm_clock_mhz', c.sm_clock_mhz, 'run_sm_clock_mhz', c.run_sm_clock_mhz, 'clock_drop', c.clock_drop,
                   'throttle_share', c.throttle_share, 'throttle_reasons', c.throttle_reasons, 'reasons', clock_reasons_text(c.throttle_reasons::UBIGINT),
                   'temp_max_c', c.temp_max_c, 'power_w', c.power_w, 'power_limit_w', c.power_limit_w,
                   'samples', c.samples, 'samples_in_steps', c.in_window = 1,
                   'kernel_slowdown', k.slowdown, 'extra_ns', k.extra_ns)::VARCHAR AS evidence
FROM metric_gpu_counters c
JOIN k ON k.run_id = c.run_id AND k.rank = c.rank
LEFT JOIN ranks r ON r.run_id = c.run_id AND r.rank = c.rank
WHERE (c.clock_drop >= $min_drop OR c.throttle_share >= $min_share) AND k.slowdown - 1 >= $min_slowdown
ORDER BY c.run_id, c.clock_drop DESC, c.rank
