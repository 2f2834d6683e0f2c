-- name: straggler
-- category: communication
-- kind: metric
-- order: 60
-- description: per rank, over collective instances matched across ranks (clocks aligned on collective ends): how often it arrived last, how long its peers waited for it in total, and how much step time it cost the job (block_ns: at each collective it held up, its arrival less the one before it, the time the critical path through the collectives runs on this rank alone)
-- threshold: min_spread_ns = 2000  # arrival spreads below this are ties, with nobody last
WITH w AS (
    SELECT * FROM collective_waits
), part AS (
    SELECT run_id, rank, count(*) AS instances FROM collective_instances GROUP BY run_id, rank
), last AS (
    SELECT run_id, last_rank AS rank, count(*) AS times_last, sum(wait_caused_ns) AS wait_caused_ns,
           avg(max_wait_ns) AS mean_lateness_ns, sum(block_ns) AS block_ns
    FROM w
    WHERE spread_ns >= $min_spread_ns
    GROUP BY run_id, last_rank
)
SELECT p.run_id, p.rank, p.instances,
       coalesce(l.times_last, 0) AS times_last,
       pct(coalesce(l.times_last, 0), p.instances) AS last_pct,
       coalesce(l.wait_caused_ns, 0) AS wait_caused_ns,
       coalesce(l.mean_lateness_ns, 0) AS mean_lateness_ns,
       coalesce(l.block_ns, 0) AS block_ns
FROM part p LEFT JOIN last l ON l.run_id = p.run_id AND l.rank = p.rank
ORDER BY p.run_id, wait_caused_ns DESC, times_last DESC, p.rank
