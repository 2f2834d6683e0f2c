-- name: straggler_whatif
-- category: steps
-- kind: metric
-- description: per step, the slowest rank's step time (what a synchronous job pays), the median rank's, and the time every step would save if the slowest rank had run at the median (PerfTracker's straggler what-if), as an alertable number per step
SELECT s.run_id, s.step AS step_lo, s.step AS step_hi,
       count(*) AS ranks,
       arg_max(s.rank, (s.end_ns - s.start_ns, -s.rank)) AS slowest_rank,
       max(s.end_ns - s.start_ns) AS slowest_ns,
       quantile_disc(s.end_ns - s.start_ns, 0.5) AS median_ns,
       max(s.end_ns - s.start_ns) - quantile_disc(s.end_ns - s.start_ns, 0.5) AS whatif_saving_ns,
       pct(max(s.end_ns - s.start_ns) - quantile_disc(s.end_ns - s.start_ns, 0.5), max(s.end_ns - s.start_ns)) AS whatif_saving_pct
FROM steps s
JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
WHERE (w.step_lo IS NULL OR s.step >= w.step_lo) AND (w.step_hi IS NULL OR s.step <= w.step_hi)
GROUP BY s.run_id, s.step
HAVING count(*) >= 2
ORDER BY s.run_id, s.step
