-- name: kernel_type_breakdown
-- category: kernels
-- kind: metric
-- description: per run, GPU busy time split into exclusive overlap classes of computation (COMP), communication (COMM) and memory (MEM) work, summed over ranks, with each class's share of busy time (HTA's kernel type breakdown)
WITH cls AS (
    SELECT {'run_id': run_id, 'rank': rank, 'class': class} AS g, ts AS s, end_ts AS e FROM gpu_window
), u AS (
    SELECT g.run_id AS run_id, g.rank AS rank, s, e,
           CASE g.class WHEN 'COMP' THEN 1 WHEN 'COMM' THEN 2 ELSE 4 END AS bit
    FROM interval_union(cls)
), edges AS (
    SELECT run_id, rank, s AS t, bit AS d FROM u
    UNION ALL
    SELECT run_id, rank, e AS t, -bit AS d FROM u
), sweep AS (
    SELECT run_id, rank, t,
           sum(d) OVER w AS state,
           lead(t) OVER w AS next_t
    FROM edges
    WINDOW w AS (PARTITION BY run_id, rank ORDER BY t, d ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
), classes AS (
    SELECT run_id,
           CASE state WHEN 1 THEN 'COMP' WHEN 2 THEN 'COMM' WHEN 3 THEN 'COMP+COMM' WHEN 4 THEN 'MEM'
                      WHEN 5 THEN 'COMP+MEM' WHEN 6 THEN 'COMM+MEM' ELSE 'COMP+COMM+MEM' END AS subject,
           sum(next_t - t) AS time_ns
    FROM sweep
    WHERE state > 0 AND next_t IS NOT NULL
    GROUP BY ALL
)
SELECT run_id, subject, time_ns, pct(time_ns, sum(time_ns) OVER (PARTITION BY run_id)) AS busy_pct
FROM classes
WHERE time_ns > 0
ORDER BY run_id, time_ns DESC, subject
