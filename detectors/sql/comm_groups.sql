-- name: comm_groups
-- category: communication
-- kind: metric
-- description: per rank, process group (pg_desc from pg_config, e.g. TP/PP/DP groups, else the group's ranks or stream) and collective: calls, GPU time, the part not hidden under compute on that GPU, its bottleneck ratio (exposed time / GPU span), bytes per call, and the achieved algorithm and bus bandwidth (NCCL's formulas) with their spread over calls (p10 and p90 of bus bandwidth)
WITH c AS (
    SELECT run_id, rank, ts, end_ts, dur,
           coalesce(pg_desc, pg_ranks, pg_name, 'stream ' || stream) AS grp,
           coalesce(coll_name, name) AS coll,
           greatest(coalesce(coll_in_elems, 0), coalesce(coll_out_elems, 0)) * dtype_bytes(coll_dtype) AS bytes,
           coll_group_size AS n
    FROM gpu_window
    WHERE class = 'COMM'
), keys AS (
    SELECT DISTINCT run_id, rank, grp, coll FROM c
), a AS (
    SELECT {'run_id': run_id, 'rank': rank, 'grp': grp, 'coll': coll} AS g, ts AS s, end_ts AS e FROM c
), b AS (
    -- compute on the same GPU, once per (group, collective) of that rank
    SELECT {'run_id': k.run_id, 'rank': k.rank, 'grp': k.grp, 'coll': k.coll} AS g, w.ts AS s, w.end_ts AS e
    FROM gpu_window w JOIN keys k ON k.run_id = w.run_id AND k.rank = w.rank
    WHERE w.class = 'COMP'
), x AS (
    SELECT g.run_id AS run_id, g.rank AS rank, g.grp AS grp, g.coll AS coll, exposed_ns FROM exposed_time(a, b)
), t AS (
    SELECT run_id, rank, grp, coll, count(*) AS calls, sum(dur) AS gpu_ns, avg(bytes) AS bytes_per_call,
           sum(bytes) / nullif(sum(dur), 0) AS algbw_gbps,
           sum(bytes) / nullif(sum(dur), 0) * bus_factor(coll, any_value(n)) AS busbw_gbps,
           quantile_cont(bytes / nullif(dur, 0) * bus_factor(coll, n), 0.1) AS busbw_p10_gbps,
           quantile_cont(bytes / nullif(dur, 0) * bus_factor(coll, n), 0.9) AS busbw_p90_gbps
    FROM c GROUP BY run_id, rank, grp, coll
)
SELECT t.run_id, t.rank, t.grp || ' ' || t.coll AS subject, t.calls, t.gpu_ns,
       coalesce(x.exposed_ns, 0) AS exposed_ns,
       pct(coalesce(x.exposed_ns, 0), sp.span_ns) AS bottleneck_pct,
       round(t.bytes_per_call) AS bytes_per_call,
       round(t.algbw_gbps, 2) AS algbw_gbps, round(t.busbw_gbps, 2) AS busbw_gbps,
       round(t.busbw_p10_gbps, 2) AS busbw_p10_gbps, round(t.busbw_p90_gbps, 2) AS busbw_p90_gbps
FROM t
JOIN gpu_span sp ON sp.run_id = t.run_id AND sp.rank = t.rank
LEFT JOIN x ON x.run_id = t.run_id AND x.rank = t.rank AND x.grp = t.grp AND x.coll = t.coll
ORDER BY t.run_id, t.rank, exposed_ns DESC, subject
