-- name: step_time
-- category: steps
-- kind: metric
-- description: per rank, the ProfilerStep ranges in the analysis window: how many, and their mean, median, min and max duration
SELECT s.run_id, s.rank,
       count(*) AS steps,
       avg(s.end_ns - s.start_ns) AS mean_ns,
       median(s.end_ns - s.start_ns) AS median_ns,
       min(s.end_ns - s.start_ns) AS min_ns,
       max(s.end_ns - s.start_ns) AS max_ns
FROM steps s
JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
WHERE (w.step_lo IS NULL OR s.step >= w.step_lo) AND (w.step_hi IS NULL OR s.step <= w.step_hi)
GROUP BY s.run_id, s.rank
ORDER BY s.run_id, s.rank
