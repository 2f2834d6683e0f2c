-- name: step_time
-- category: steps
-- kind: metric
-- order: 20
-- description: per rank, the steps in the analysis window: how many, and their mean, median, min and max duration, measured on the GPU timeline as the step-time account has them (from the end of the previous step's GPU work to the end of the step's own), else by the ProfilerStep ranges on the host
WITH acct AS (
    SELECT DISTINCT run_id, rank, step, start_ns, end_ns FROM step_account
), s AS (
    SELECT run_id, rank, step, start_ns, end_ns FROM acct
    UNION ALL
    SELECT run_id, rank, step, start_ns, end_ns FROM steps x
    WHERE NOT EXISTS (SELECT 1 FROM acct a WHERE a.run_id = x.run_id AND a.rank = x.rank)
)
SELECT s.run_id, s.rank,
       count(*) AS steps,
       avg(s.end_ns - s.start_ns) AS mean_ns,
       median(s.end_ns - s.start_ns) AS median_ns,
       min(s.end_ns - s.start_ns) AS min_ns,
       max(s.end_ns - s.start_ns) AS max_ns
FROM s
JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
WHERE (w.step_lo IS NULL OR s.step >= w.step_lo) AND (w.step_hi IS NULL OR s.step <= w.step_hi)
GROUP BY s.run_id, s.rank
ORDER BY s.run_id, s.rank
