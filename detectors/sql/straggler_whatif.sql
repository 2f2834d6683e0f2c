-- name: straggler_whatif
-- category: steps
-- kind: metric
-- order: 30
-- description: per step, the rank that cost the job the most step time and how much (PerfTracker's straggler what-if, from the critical path through the collectives): at each collective the last member to arrive held everyone up by its arrival less the one before it; summed over the step, that is what the step would save had that rank kept up. Step durations do not tell, as synchronous collectives even them out: the slowest and median rank step times are given for reference
WITH b AS (
    SELECT run_id, step, rank, sum(block_ns) AS block_ns
    FROM collective_instances
    GROUP BY run_id, step, rank
), top AS (
    SELECT run_id, step, arg_max(rank, (block_ns, -rank)) AS costliest_rank, max(block_ns) AS whatif_saving_ns,
           sum(block_ns) AS blocked_ns
    FROM b GROUP BY run_id, step
), d AS (
    SELECT s.run_id, s.step, count(*) AS ranks,
           max(s.end_ns - s.start_ns) AS slowest_ns,
           quantile_disc(s.end_ns - s.start_ns, 0.5) AS median_ns
    FROM steps s
    JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
    WHERE (w.step_lo IS NULL OR s.step >= w.step_lo) AND (w.step_hi IS NULL OR s.step <= w.step_hi)
    GROUP BY s.run_id, s.step
    HAVING count(*) >= 2
)
SELECT d.run_id, d.step AS step_lo, d.step AS step_hi, d.ranks,
       t.costliest_rank,
       coalesce(t.whatif_saving_ns, 0) AS whatif_saving_ns,
       pct(coalesce(t.whatif_saving_ns, 0), d.slowest_ns) AS whatif_saving_pct,
       coalesce(t.blocked_ns, 0) AS blocked_ns,
       d.slowest_ns, d.median_ns
FROM d LEFT JOIN top t ON t.run_id = d.run_id AND t.step = d.step
ORDER BY d.run_id, d.step
