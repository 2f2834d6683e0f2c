-- name: coll_wait
-- category: communication
-- kind: metric
-- description: per rank, step, process group and collective, over collective instances matched across ranks: how long the rank spent in them waiting for the last member to arrive, and how long moving data (transfer), with the bus bandwidth of the transfer part (NCCL's formulas; a wait is not slow bandwidth). Empty for a run whose collectives match no peer (one rank traced): its communication cannot be split
WITH c AS (
    SELECT ci.run_id, ci.rank, ci.step, ci.wait_ns, ci.transfer_ns, ci.is_last, ci.block_ns,
           coalesce(nullif(g.pg_desc, 'undefined'), 'pg ' || g.pg_name || coalesce(' ' || g.pg_ranks, ''), 'stream ' || g.stream) AS grp,
           coalesce(g.coll_name, g.name) AS coll,
           greatest(coalesce(g.coll_in_elems, 0), coalesce(g.coll_out_elems, 0)) * dtype_bytes(g.coll_dtype) AS bytes,
           bus_factor(g.coll_name, g.coll_group_size) AS bus
    FROM collective_instances ci
    JOIN gpu_window g ON g.run_id = ci.run_id AND g.rank = ci.rank AND g.stream IS NOT DISTINCT FROM ci.stream AND g.ts = ci.ts AND g.class = 'COMM'
)
SELECT run_id, rank, step AS step_lo, step AS step_hi, grp || ' ' || coll AS subject,
       count(*) AS instances,
       sum(wait_ns) AS wait_ns,
       sum(transfer_ns) AS transfer_ns,
       pct(sum(wait_ns), sum(wait_ns) + sum(transfer_ns)) AS wait_pct,
       count(*) FILTER (WHERE is_last) AS times_last,
       sum(block_ns) AS block_ns,
       sum(bytes) / nullif(sum(transfer_ns), 0) * any_value(bus) AS transfer_busbw_gbps
FROM c
GROUP BY run_id, rank, step, grp, coll
ORDER BY run_id, rank, step, subject
