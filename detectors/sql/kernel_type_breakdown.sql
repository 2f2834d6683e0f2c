-- name: kernel_type_breakdown
-- category: kernels
-- kind: metric
-- order: 40
-- description: per run, GPU busy time split into exclusive overlap classes of computation (COMP), communication (COMM: a collective's transfer), waiting in a collective for a late member (WAIT) and memory (MEM) work, summed over ranks, with each class's share of busy time (HTA's kernel type breakdown, with its COMM split into transfer and wait)
WITH classes AS (
    SELECT run_id,
           concat_ws('+', CASE WHEN comp_active(state) THEN 'COMP' END,
                          CASE WHEN comm_active(state) THEN 'COMM' END,
                          CASE WHEN wait_active(state) THEN 'WAIT' END,
                          CASE WHEN mem_active(state) THEN 'MEM' END) AS subject,
           sum(ns) AS time_ns
    FROM gpu_class_time
    GROUP BY ALL
)
SELECT run_id, subject, time_ns, pct(time_ns, sum(time_ns) OVER (PARTITION BY run_id)) AS busy_pct
FROM classes
WHERE time_ns > 0
ORDER BY run_id, time_ns DESC, subject
