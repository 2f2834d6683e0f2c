-- name: idle_breakdown
-- category: utilization
-- kind: metric
-- order: 70
-- description: per rank and stream, the gaps between consecutive GPU activities split as HTA does: host wait (the launch call began after the previous activity ended), kernel wait (a shorter gap than the threshold), other
-- threshold: kernel_wait_ns = 30000  # HTA's consecutive_kernel_delay default, 30 in its microsecond units
WITH k AS (
    -- by the window's rank number (rk) rather than run and rank: the
    -- window function partitions and sorts 140K rows (syn8) on it, and an
    -- integer costs less there than a run id's text (idle_breakdown: CPU
    -- 130 -> 101 ms at the median, bench/RESULTS.md)
    SELECT rk, stream, ts, end_ts, launch_ts,
           lag(end_ts) OVER (PARTITION BY rk, stream ORDER BY ts, end_ts) AS prev_end
    FROM gpu_window
), gaps AS (
    SELECT rk, stream, greatest(ts - prev_end, 0) AS gap,
           CASE WHEN launch_ts > prev_end THEN 'host_wait'
                WHEN ts - prev_end < $kernel_wait_ns THEN 'kernel_wait'
                ELSE 'other' END AS category
    FROM k
    WHERE prev_end IS NOT NULL
), per_stream AS (
    SELECT rk, stream,
           count(*) AS gaps,
           sum(gap) AS idle_ns,
           coalesce(sum(gap) FILTER (WHERE category = 'host_wait'), 0) AS host_wait_ns,
           coalesce(sum(gap) FILTER (WHERE category = 'kernel_wait'), 0) AS kernel_wait_ns,
           coalesce(sum(gap) FILTER (WHERE category = 'other'), 0) AS other_ns
    FROM gaps
    GROUP BY rk, stream
)
SELECT w.run_id, w.rank, 'stream ' || p.stream AS subject, gaps, idle_ns, host_wait_ns, kernel_wait_ns, other_ns,
       pct(host_wait_ns, idle_ns) AS host_wait_pct,
       pct(kernel_wait_ns, idle_ns) AS kernel_wait_pct,
       pct(other_ns, idle_ns) AS other_pct
FROM per_stream p JOIN analysis_window w ON w.rk = p.rk
ORDER BY w.run_id, w.rank, p.stream
