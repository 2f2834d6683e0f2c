-- name: comm_comp_overlap
-- category: communication
-- kind: metric
-- description: per rank, the share of communication time during which compute kernels also ran (HTA's comm/comp overlap), and the communication time left exposed, also as a share of the GPU span
WITH c AS (
    SELECT run_id, rank,
           sum(ns) FILTER (WHERE comm_active(state)) AS comm_ns,
           coalesce(sum(ns) FILTER (WHERE comm_active(state) AND comp_active(state)), 0) AS overlap_ns
    FROM gpu_class_time
    GROUP BY run_id, rank
    HAVING sum(ns) FILTER (WHERE comm_active(state)) > 0
)
SELECT c.run_id, c.rank,
       c.comm_ns,
       c.overlap_ns,
       pct(c.overlap_ns, c.comm_ns) AS overlap_pct,
       c.comm_ns - c.overlap_ns AS exposed_comm_ns,
       pct(c.comm_ns - c.overlap_ns, sp.span_ns) AS exposed_comm_pct
FROM c
JOIN gpu_span sp ON sp.run_id = c.run_id AND sp.rank = c.rank
ORDER BY c.run_id, c.rank
