-- name: kernel_speed
-- category: compute
-- kind: metric
-- description: per rank, how much slower its compute kernels run than the same kernels on its peers: over every kernel name seen on at least min_ranks ranks, the rank's median duration against the peers' median, weighted by the rank's calls (1.00 = as fast as its peers), the time that costs, and the robust z-score of the slowdown over the run's ranks (median absolute deviation floored at 1% of the median)
-- threshold: min_ranks = 2  # a kernel must run on this many ranks to be compared
WITH k AS (
    SELECT run_id, rank, name, count(*) AS calls, median(dur) AS med
    FROM gpu_window
    WHERE class = 'COMP'
    GROUP BY run_id, rank, name
), peer AS (
    SELECT run_id, name, median(med) AS peer_med
    FROM k GROUP BY run_id, name
    HAVING count(*) >= $min_ranks AND median(med) > 0
), r AS (
    SELECT k.run_id, k.rank,
           sum(k.calls * k.med) / sum(k.calls * p.peer_med) AS slowdown,
           sum(k.calls * (k.med - p.peer_med)) AS extra_ns,
           count(*) AS kernels_compared,
           sum(k.calls) AS calls_compared
    FROM k JOIN peer p ON p.run_id = k.run_id AND p.name = k.name
    GROUP BY k.run_id, k.rank
), m AS (
    SELECT run_id, median(slowdown) AS med FROM r GROUP BY run_id
), d AS (
    SELECT r.run_id, median(abs(r.slowdown - m.med)) AS mad
    FROM r JOIN m ON m.run_id = r.run_id GROUP BY r.run_id
)
SELECT r.run_id, r.rank, round(r.slowdown, 4) AS slowdown, r.extra_ns, r.kernels_compared, r.calls_compared,
       -- a 1% floor under the MAD: peers that agree exactly must not make
       -- any difference infinitely significant, nor none at all
       round(robust_z(r.slowdown, m.med, greatest(d.mad, 0.01 * m.med)), 2) AS robust_z
FROM r JOIN m ON m.run_id = r.run_id JOIN d ON d.run_id = r.run_id
ORDER BY r.run_id, r.rank
