-- name: slow_rank
-- category: compute
-- kind: finding
-- severity: warn
-- description: a rank whose compute kernels run slower than the same kernels on its peers, by more than min_slowdown and as an outlier among the run's ranks (robust z-score); not when every other rank of its host is that slow too (the host is: see slow_host)
-- threshold: min_slowdown = 0.10  # the rank's kernels take this much longer than its peers' (0.10 = 10%)
-- threshold: min_z = 3.0  # robust z-score of the slowdown over the run's ranks
-- threshold: min_ranks = 3  # fewer ranks cannot single one out
-- fix: compare this GPU with its peers: clocks and throttling (DCGM SM clock, power, temperature), ECC/XID errors, a different GPU model or MIG slice, other processes on the GPU; if its host's other ranks are slow too, see slow_host
-- shows: compute, throttle, slow_host
WITH s AS (
    SELECT run_id, rank,
           max(slowdown) AS slowdown, max(extra_ns) AS extra_ns, max(robust_z) AS z
    FROM metric_kernel_speed
    GROUP BY run_id, rank
), n AS (
    SELECT run_id, count(*) AS ranks FROM s GROUP BY run_id
), mates AS (
    -- the slowest and fastest of the other ranks on the rank's host: when
    -- all of them are slow too, the host is (slow_host), not the rank
    SELECT a.run_id, a.rank, count(*) AS mates, min(b.slowdown) AS mates_min
    FROM s a
    JOIN ranks ra ON ra.run_id = a.run_id AND ra.rank = a.rank AND ra.host <> ''
    JOIN ranks rb ON rb.run_id = a.run_id AND rb.host = ra.host AND rb.rank <> a.rank
    JOIN s b ON b.run_id = a.run_id AND b.rank = rb.rank
    GROUP BY a.run_id, a.rank
), k AS MATERIALIZED (
    -- each rank's median per compute kernel, computed once: the peers'
    -- median below reads it too (inlined twice, the per-rank medians over
    -- every compute kernel were most of this query's time)
    SELECT run_id, rank, name, count(*) AS calls, median(dur) AS med FROM gpu_window WHERE class = 'COMP' GROUP BY ALL
), worst AS (
    -- the kernels that cost the rank the most time against its peers
    SELECT run_id, rank, string_agg(printf('%s %.2fx', left(name, 60), ratio), '; ' ORDER BY extra DESC) AS kernels
    FROM (
        SELECT k.run_id, k.rank, k.name, k.med / p.peer_med AS ratio, k.calls * (k.med - p.peer_med) AS extra
        FROM k
        JOIN (SELECT run_id, name, median(med) AS peer_med FROM k
              GROUP BY ALL HAVING count(*) >= 2 AND median(med) > 0) p
          ON p.run_id = k.run_id AND p.name = k.name
        QUALIFY row_number() OVER (PARTITION BY k.run_id, k.rank ORDER BY k.calls * (k.med - p.peer_med) DESC, k.name) <= 3
    )
    GROUP BY run_id, rank
)
SELECT s.run_id, s.rank, r.host,
       'kernel_slowdown' AS metric,
       s.slowdown - 1 AS value,
       $min_slowdown AS threshold,
       printf('rank %d runs its compute kernels %.0f%% slower than its peers (robust z %.1f over %d ranks), %s more GPU time in the window; slowest against peers: %s',
              s.rank, 100 * (s.slowdown - 1), s.z, n.ranks, fmt_ns(s.extra_ns), w.kernels) AS message,
       printf('up to %s of compute per window on rank %d, and the waiting it causes its peers at every collective', fmt_ns(s.extra_ns), s.rank) AS impact,
       'kernel_speed slowdown of this rank back near 1.00' AS validation,
       'measured' AS confidence,
       json_object('slowdown', s.slowdown, 'robust_z', s.z, 'extra_ns', s.extra_ns, 'ranks', n.ranks, 'kernels', w.kernels)::VARCHAR AS evidence
FROM s
JOIN n ON n.run_id = s.run_id
LEFT JOIN ranks r ON r.run_id = s.run_id AND r.rank = s.rank
LEFT JOIN worst w ON w.run_id = s.run_id AND w.rank = s.rank
LEFT JOIN mates m ON m.run_id = s.run_id AND m.rank = s.rank
WHERE n.ranks >= $min_ranks AND s.slowdown - 1 >= $min_slowdown AND s.z >= $min_z
  AND NOT coalesce(m.mates >= 1 AND m.mates_min - 1 >= $min_slowdown, false)
ORDER BY s.run_id, s.slowdown DESC
