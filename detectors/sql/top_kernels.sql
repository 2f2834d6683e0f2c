-- name: top_kernels
-- category: kernels
-- kind: metric
-- description: per run and class (COMP, COMM, MEM), the kernels with the most GPU time over all ranks: count, total, mean, min, max and standard deviation of duration, and share of the class's time
-- threshold: top_n = 10  # kernels listed per class
WITH k AS (
    SELECT run_id, class, name,
           count(*) AS count,
           sum(dur) AS sum_ns,
           avg(dur) AS mean_ns,
           min(dur) AS min_ns,
           max(dur) AS max_ns,
           coalesce(stddev_pop(dur), 0) AS std_ns
    FROM gpu_window
    GROUP BY run_id, class, name
)
SELECT run_id, class, name, count, sum_ns, mean_ns, min_ns, max_ns, std_ns,
       pct(sum_ns, sum(sum_ns) OVER (PARTITION BY run_id, class)) AS class_pct
FROM k
QUALIFY row_number() OVER (PARTITION BY run_id, class ORDER BY sum_ns DESC, name) <= $top_n
ORDER BY run_id, class, sum_ns DESC, name
