-- name: comm_comp_overlap
-- category: communication
-- kind: metric
-- description: per rank, the share of communication time during which compute kernels also ran (HTA's comm/comp overlap), and the communication time left exposed, also as a share of the GPU span
WITH comm AS (
    SELECT {'run_id': run_id, 'rank': rank} AS g, ts AS s, end_ts AS e FROM gpu_window WHERE class = 'COMM'
), comp AS (
    SELECT {'run_id': run_id, 'rank': rank} AS g, ts AS s, end_ts AS e FROM gpu_window WHERE class = 'COMP'
)
SELECT x.g.run_id AS run_id, x.g.rank AS rank,
       x.a_ns AS comm_ns,
       x.covered_ns AS overlap_ns,
       pct(x.covered_ns, x.a_ns) AS overlap_pct,
       x.exposed_ns AS exposed_comm_ns,
       pct(x.exposed_ns, sp.span_ns) AS exposed_comm_pct
FROM exposed_time(comm, comp) x
JOIN gpu_span sp ON sp.run_id = x.g.run_id AND sp.rank = x.g.rank
ORDER BY run_id, rank
