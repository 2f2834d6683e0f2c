-- name: comm_comp_overlap
-- category: communication
-- kind: metric
-- order: 50
-- description: per rank, the share of communication time during which compute kernels also ran (HTA's comm/comp overlap), and the communication time left exposed, also as a share of the GPU span. Communication here is the transfer part of each collective: the time a rank spent in one waiting for a late member (wait_ns, see coll_wait) is charged to that member, not counted as this rank's communication
WITH c AS (
    SELECT run_id, rank,
           sum(ns) FILTER (WHERE comm_active(state)) AS comm_ns,
           coalesce(sum(ns) FILTER (WHERE comm_active(state) AND comp_active(state)), 0) AS overlap_ns,
           coalesce(sum(ns) FILTER (WHERE wait_active(state) AND NOT comm_active(state) AND NOT comp_active(state)), 0) AS wait_ns
    FROM gpu_class_time
    GROUP BY run_id, rank
    HAVING sum(ns) FILTER (WHERE comm_active(state) OR wait_active(state)) > 0
)
SELECT c.run_id, c.rank,
       coalesce(c.comm_ns, 0) AS comm_ns,
       c.overlap_ns,
       pct(c.overlap_ns, c.comm_ns) AS overlap_pct,
       coalesce(c.comm_ns, 0) - c.overlap_ns AS exposed_comm_ns,
       pct(coalesce(c.comm_ns, 0) - c.overlap_ns, sp.span_ns) AS exposed_comm_pct,
       c.wait_ns
FROM c
JOIN gpu_span sp ON sp.run_id = c.run_id AND sp.rank = c.rank
ORDER BY c.run_id, c.rank
