-- name: gpu_gaps
-- category: utilization
-- kind: finding
-- severity: warn
-- description: stretches in which a rank's GPU runs nothing at all on any stream for longer than the threshold (Nsight Systems' gpu_gaps rule), with where the longest one falls
-- threshold: min_gap_ns = 5000000  # a gap at least this long (5 ms) is reported
-- fix: look at what the host does during the longest gap (data loading, checkpointing, logging, a synchronizing call, Python between steps) and overlap or move it off the step
-- symptom: idle
WITH u AS (
    -- partitioned by the window's rank number, rk (one per run and rank):
    -- an integer to hash and sort on rather than a run id's text
    SELECT run_id, rank, start_ns AS s, lag(end_ns) OVER (PARTITION BY rk ORDER BY start_ns) AS prev_e
    FROM gpu_busy
), gaps AS (
    SELECT run_id, rank, prev_e AS gap_start, s - prev_e AS gap_ns FROM u WHERE prev_e IS NOT NULL AND s - prev_e >= $min_gap_ns
)
SELECT gaps.run_id, gaps.rank,
       'gpu_gaps' AS metric,
       count(*) AS value,
       $min_gap_ns AS threshold,
       printf('rank %d: %d GPU gap(s) of at least %s, %s in total; the longest, %s, starts %s into the GPU span',
              gaps.rank, count(*), fmt_ns($min_gap_ns), fmt_ns(sum(gap_ns)), fmt_ns(max(gap_ns)),
              fmt_ns(arg_max(gap_start, (gap_ns, -gap_start)) - any_value(sp.start_ns))) AS message,
       printf('up to %s of GPU time a window', fmt_ns(sum(gap_ns))) AS impact,
       json_object('gaps', count(*), 'total_ns', sum(gap_ns), 'longest_ns', max(gap_ns),
                   'longest_at_ns', arg_max(gap_start, (gap_ns, -gap_start)))::VARCHAR AS evidence
FROM gaps JOIN gpu_span sp ON sp.run_id = gaps.run_id AND sp.rank = gaps.rank
GROUP BY gaps.run_id, gaps.rank
ORDER BY gaps.run_id, gaps.rank
