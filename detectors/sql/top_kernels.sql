-- name: top_kernels
-- category: kernels
-- kind: metric
-- order: 90
-- description: per run and class (COMP, COMM, MEM), the kernels with the most GPU time over all ranks: count, total, mean, median (cost per execution), min, max and standard deviation of duration, share of the class's time, and bottleneck ratio (its time over the ranks' summed GPU spans, as PerfTracker reports major kernels)
-- threshold: top_n = 10  # kernels listed per class
WITH k AS (
    SELECT run_id, class, name,
           count(*) AS count,
           sum(dur) AS sum_ns,
           avg(dur) AS mean_ns,
           median(dur) AS median_ns,
           min(dur) AS min_ns,
           max(dur) AS max_ns,
           coalesce(stddev_pop(dur), 0) AS std_ns
    FROM gpu_window
    GROUP BY run_id, class, name
), spans AS (
    SELECT run_id, sum(span_ns) AS span_ns FROM gpu_span GROUP BY run_id
)
SELECT k.run_id, class, name, count, sum_ns, mean_ns, median_ns, min_ns, max_ns, std_ns,
       pct(sum_ns, sum(sum_ns) OVER (PARTITION BY k.run_id, class)) AS class_pct,
       pct(sum_ns, s.span_ns) AS bottleneck_pct
FROM k JOIN spans s ON s.run_id = k.run_id
QUALIFY row_number() OVER (PARTITION BY k.run_id, class ORDER BY sum_ns DESC, name) <= $top_n
ORDER BY k.run_id, class, sum_ns DESC, name
