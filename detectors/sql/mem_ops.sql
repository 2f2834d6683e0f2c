-- name: mem_ops
-- category: memory_ops
-- kind: metric
-- order: 100
-- description: per rank, GPU memory operations by kind (Memcpy HtoD, DtoH, DtoD, PtoP, Memset): count, bytes, GPU time, the part not hidden under compute, its bottleneck ratio (exposed time / GPU span, as PerfTracker defines it) and the achieved bandwidth
WITH ops AS (
    SELECT run_id, rank, rk, ts, end_ts, bytes, dur,
           CASE WHEN kind = 'memset' THEN 'Memset' ELSE 'Memcpy ' || coalesce(copy_kind, 'other') END AS op
    FROM gpu_window
    WHERE class = 'MEM'
), exposed AS (
    -- the sweep of compute against each operation kind: a shared view
    SELECT run_id, rank, op, exposed_ns FROM gpu_mem_exposed
), totals AS (
    SELECT run_id, rank, op, count(*) AS ops, coalesce(sum(bytes), 0) AS bytes, sum(dur) AS gpu_ns
    FROM ops GROUP BY run_id, rank, op
)
SELECT t.run_id, t.rank, t.op AS subject, t.ops, t.bytes AS moved_bytes, t.gpu_ns,
       coalesce(x.exposed_ns, 0) AS exposed_ns,
       pct(coalesce(x.exposed_ns, 0), sp.span_ns) AS bottleneck_pct,
       CASE WHEN t.gpu_ns > 0 THEN t.bytes / t.gpu_ns ELSE 0 END AS achieved_gbps
FROM totals t
JOIN gpu_span sp ON sp.run_id = t.run_id AND sp.rank = t.rank
LEFT JOIN exposed x ON x.run_id = t.run_id AND x.rank = t.rank AND x.op = t.op
ORDER BY t.run_id, t.rank, exposed_ns DESC, t.op
