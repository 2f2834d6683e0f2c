-- name: coll_wait
-- category: communication
-- kind: metric
-- description: per rank, step, process group and collective, over collective instances matched across ranks: how long the rank spent in them waiting for the last member to arrive, and how long moving data (transfer), with the bus bandwidth of the transfer part (NCCL's formulas; a wait is not slow bandwidth). Empty for a run whose collectives match no peer (one rank traced): its communication cannot be split
WITH c AS (
    -- collective_instances carries each collective's group, bytes and size
    SELECT run_id, rank, step, wait_ns, transfer_ns, is_last, block_ns, grp,
           coalesce(coll_name, name) AS coll, bytes,
           bus_factor(coll_name, coll_group_size) AS bus
    FROM collective_instances
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
