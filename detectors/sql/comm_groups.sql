-- name: comm_groups
-- category: communication
-- kind: metric
-- description: per rank, process group (pg_desc from pg_config, e.g. TP/PP/DP groups, else the group's number and ranks, else the stream), collective, NCCL algorithm/protocol (from the kernel name: RING, TREE, NVLS, ... / LL, LL128, SIMPLE) and transport: calls, GPU time and how much of it was waiting for a late member (wait_ns, matched across ranks), the transfer part not hidden under compute on that GPU, its bottleneck ratio (exposed time / GPU span), bytes per call, and the achieved algorithm and bus bandwidth (NCCL's formulas, over transfer time: waiting is not slow bandwidth) with their spread over calls (p10 and p90 of bus bandwidth). Transport is inferred from where the group's ranks run: ranks on more than one host talk over the network; all on one host over NVLink when the GPU has it (gpu/ catalog), else PCIe; unknown when a member's host is not known
WITH ci AS (
    SELECT run_id, rank, stream, ts, wait_ns FROM collective_instances WHERE wait_ns > 0
), c AS (
    -- each collective from its last member's arrival: its transfer; grp
    -- and coll as comm_exposed (the shared view of the transfer time no
    -- compute hid) names them
    SELECT g.run_id, g.rank, g.ts + coalesce(ci.wait_ns, 0) AS ts, g.end_ts, g.dur - coalesce(ci.wait_ns, 0) AS dur,
           coalesce(ci.wait_ns, 0) AS wait_ns,
           coalesce(nullif(pg_desc, 'undefined'), 'pg ' || pg_name || coalesce(' ' || pg_ranks, ''), 'stream ' || g.stream) AS grp,
           pg_ranks,
           coalesce(coll_name, name) || coalesce(' ' || coll_algo || coalesce('/' || coll_proto, ''), '') AS coll,
           greatest(coalesce(coll_in_elems, 0), coalesce(coll_out_elems, 0)) * dtype_bytes(coll_dtype) AS bytes,
           coll_group_size AS n,
           coll_name AS base
    FROM gpu_window g
    LEFT JOIN ci ON ci.run_id = g.run_id AND ci.rank = g.rank AND ci.stream IS NOT DISTINCT FROM g.stream AND ci.ts = g.ts
    WHERE g.class = 'COMM' AND g.kind = 'comm' -- kind, the same rows, reaches the scan of slices_detail
), rk AS (
    SELECT run_id, rank, nullif(host, '') AS host, gpu_name FROM ranks
), whole AS (
    -- a group without a rank list is taken to span the run, which is only
    -- known when every rank of the run was traced
    SELECT r.run_id, count(*) = max(coalesce(u.world_size, 0)) AS all_traced
    FROM rk r JOIN runs u USING (run_id) GROUP BY r.run_id
), grps AS (
    SELECT DISTINCT run_id, grp, pg_ranks FROM c
), members AS (
    SELECT g.run_id, g.grp, unnest(string_split(trim(g.pg_ranks, '[] '), ',')::INTEGER[]) AS member
    FROM grps g WHERE g.pg_ranks IS NOT NULL
    UNION ALL
    SELECT g.run_id, g.grp, r.rank
    FROM grps g JOIN whole w ON w.run_id = g.run_id AND w.all_traced JOIN rk r ON r.run_id = g.run_id
    WHERE g.pg_ranks IS NULL
), tr AS (
    SELECT m.run_id, m.grp,
           CASE WHEN count(r.host) < count(*) THEN NULL
                WHEN count(DISTINCT r.host) > 1 THEN 'network'
                WHEN max(s.link_gbs) > 0 THEN 'NVLink'
                WHEN count(s.gpu_name) = count(*) THEN 'PCIe' END AS transport
    FROM members m
    LEFT JOIN rk r ON r.run_id = m.run_id AND r.rank = m.member
    LEFT JOIN gpu_specs s ON s.gpu_name = r.gpu_name
    GROUP BY m.run_id, m.grp
), t AS (
    SELECT run_id, rank, grp, coll, count(*) AS calls, sum(dur + wait_ns) AS gpu_ns, sum(wait_ns) AS wait_ns, avg(bytes) AS bytes_per_call,
           sum(bytes) / nullif(sum(dur), 0) AS algbw_gbps,
           sum(bytes) / nullif(sum(dur), 0) * bus_factor(any_value(base), any_value(n)) AS busbw_gbps,
           quantile_cont(bytes / nullif(dur, 0) * bus_factor(base, n), 0.1) AS busbw_p10_gbps,
           quantile_cont(bytes / nullif(dur, 0) * bus_factor(base, n), 0.9) AS busbw_p90_gbps
    FROM c GROUP BY run_id, rank, grp, coll
)
SELECT t.run_id, t.rank, t.grp || ' ' || t.coll || ' via ' || coalesce(tr.transport, 'unknown transport') AS subject,
       t.calls, t.gpu_ns, t.wait_ns,
       coalesce(x.exposed_ns, 0) AS exposed_ns,
       pct(coalesce(x.exposed_ns, 0), sp.span_ns) AS bottleneck_pct,
       round(t.bytes_per_call) AS bytes_per_call,
       round(t.algbw_gbps, 2) AS algbw_gbps, round(t.busbw_gbps, 2) AS busbw_gbps,
       round(t.busbw_p10_gbps, 2) AS busbw_p10_gbps, round(t.busbw_p90_gbps, 2) AS busbw_p90_gbps
FROM t
JOIN gpu_span sp ON sp.run_id = t.run_id AND sp.rank = t.rank
LEFT JOIN tr ON tr.run_id = t.run_id AND tr.grp = t.grp
LEFT JOIN comm_exposed x ON x.run_id = t.run_id AND x.rank = t.rank AND x.grp = t.grp AND x.coll = t.coll
ORDER BY t.run_id, t.rank, exposed_ns DESC, subject
