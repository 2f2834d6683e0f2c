-- name: kernel_type_breakdown
-- category: kernels
-- kind: metric
-- description: per run, GPU busy time split into exclusive overlap classes of computation (COMP), communication (COMM) and memory (MEM) work, summed over ranks, with each class's share of busy time (HTA's kernel type breakdown)
WITH cls AS (
    -- each class counts in its own 20-bit digit of the sweep state
    SELECT {'run_id': run_id, 'rank': rank} AS g, ts AS s, end_ts AS e,
           CASE class WHEN 'COMP' THEN 1 WHEN 'COMM' THEN 1048576 ELSE 1099511627776 END AS w
    FROM gpu_window
), classes AS (
    SELECT g.run_id AS run_id,
           concat_ws('+', CASE WHEN state % 1048576 > 0 THEN 'COMP' END,
                          CASE WHEN (state // 1048576) % 1048576 > 0 THEN 'COMM' END,
                          CASE WHEN state // 1099511627776 > 0 THEN 'MEM' END) AS subject,
           sum(ns) AS time_ns
    FROM active_time(cls)
    GROUP BY ALL
)
SELECT run_id, subject, time_ns, pct(time_ns, sum(time_ns) OVER (PARTITION BY run_id)) AS busy_pct
FROM classes
WHERE time_ns > 0
ORDER BY run_id, time_ns DESC, subject
