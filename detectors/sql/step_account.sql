-- name: step_account
-- category: steps
-- kind: metric
-- description: per rank, where a step's time goes on the GPU timeline (the step-time account the readers build from each rank's timeline, ingest/timeline), averaged over the complete steps of the analysis window: compute (compute kernels run), exposed communication, copies alone, and GPU idle by what the thread that launches the GPU's next work was doing (sync: blocked until the GPU drained; input: the data loader; host: host work that launches nothing; launch: launch calls and the operators around them; unrecorded: no recorded event); ms a step, share of the step, and the operator, frame or copy kind that took the most of it
WITH a AS (
    SELECT a.*
    FROM step_account a
    JOIN analysis_window w ON w.run_id = a.run_id AND w.rank = a.rank
    WHERE a.complete
      AND (w.step_lo IS NULL OR a.step >= w.step_lo) AND (w.step_hi IS NULL OR a.step <= w.step_hi)
), steps AS (
    SELECT run_id, rank, count(DISTINCT coalesce(step, -1)) AS steps
    FROM a GROUP BY run_id, rank
), wins AS (
    SELECT run_id, rank, sum(end_ns - start_ns) AS window_ns
    FROM (SELECT DISTINCT run_id, rank, step, start_ns, end_ns FROM a)
    GROUP BY run_id, rank
), c AS (
    SELECT run_id, rank, category, cause, sum(ns) AS ns, sum(intervals) AS intervals,
           arg_max(subject, ns) AS top_subject
    FROM (SELECT run_id, rank, category, cause, subject, sum(ns) AS ns, sum(intervals) AS intervals
          FROM a GROUP BY run_id, rank, category, cause, subject)
    GROUP BY run_id, rank, category, cause
)
SELECT c.run_id, c.rank, c.category || ' ' || c.cause AS subject, c.category, c.cause,
       s.steps,
       round(c.ns / s.steps / 1e6, 3) AS ms_per_step,
       round(100 * c.ns / w.window_ns, 2) AS pct_of_step,
       c.intervals, c.top_subject
FROM c
JOIN steps s ON s.run_id = c.run_id AND s.rank = c.rank
JOIN wins w ON w.run_id = c.run_id AND w.rank = c.rank
ORDER BY c.run_id, c.rank, c.ns DESC, c.category, c.cause
