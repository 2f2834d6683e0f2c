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
), sweep_in AS (
    -- compute counts 1; each operation kind counts in its own digit
    SELECT rk AS g, ts AS s, end_ts AS e, 1::HUGEINT AS w FROM gpu_window WHERE class = 'COMP'
    UNION ALL
    SELECT rk, ts, end_ts,
           CASE op WHEN 'Memcpy HtoD' THEN 1048576::HUGEINT WHEN 'Memcpy DtoH' THEN 1099511627776::HUGEINT
                   WHEN 'Memcpy DtoD' THEN 1152921504606846976::HUGEINT WHEN 'Memcpy PtoP' THEN 1208925819614629174706176::HUGEINT
                   WHEN 'Memset' THEN 1267650600228229401496703205376::HUGEINT ELSE 1329227995784915872903807060280344576::HUGEINT END
    FROM ops
), states AS (
    SELECT w.run_id, w.rank, a.state, a.ns FROM active_time(sweep_in) a JOIN analysis_window w ON w.rk = a.g
), exposed AS (
    SELECT run_id, rank, o.op, sum(ns) AS exposed_ns
    FROM states, (VALUES ('Memcpy HtoD', 1), ('Memcpy DtoH', 2), ('Memcpy DtoD', 3), ('Memcpy PtoP', 4), ('Memset', 5), ('Memcpy other', 6)) o(op, digit)
    WHERE state & 1048575 = 0                                -- no compute running
      AND (state >> (20 * o.digit)::INTEGER) & 1048575 > 0    -- this kind running
    GROUP BY run_id, rank, o.op
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
