-- name: comm_exposed_ratio
-- category: communication
-- kind: finding
-- severity: warn
-- description: ranks whose communication not hidden behind compute takes at least the threshold share of the GPU span
-- threshold: min_ratio = 0.10  # exposed communication / GPU span
-- fix: overlap communication with compute, or communicate fewer bytes
-- symptom: transfer
WITH m AS (
    SELECT run_id, rank,
           max(exposed_comm_ns) AS exposed_ns, max(comm_ns) AS comm_ns,
           max(overlap_pct) AS overlap_pct, max(exposed_comm_pct) AS exposed_pct
    FROM metric_comm_comp_overlap
    GROUP BY run_id, rank
), top AS (
    SELECT run_id, rank, string_agg(coll || ' ' || fmt_ns(t), ', ' ORDER BY t DESC) AS colls,
           first(coll ORDER BY t DESC, coll) AS main_coll
    FROM (SELECT run_id, rank, coalesce(coll_name, name) AS coll, sum(dur) AS t
          FROM gpu_window WHERE class = 'COMM' AND kind = 'comm' GROUP BY run_id, rank, coalesce(coll_name, name)
          QUALIFY row_number() OVER (PARTITION BY run_id, rank ORDER BY sum(dur) DESC) <= 3)
    GROUP BY run_id, rank
)
SELECT m.run_id, m.rank,
       'exposed_comm_ratio' AS metric,
       m.exposed_pct / 100 AS value,
       $min_ratio AS threshold,
       CASE WHEN m.exposed_pct / 100 >= 2 * $min_ratio THEN 'critical' END AS severity,
       printf('rank %d: %.1f%% of the GPU span is communication that no compute overlaps (%s exposed of %s communicating; %.1f%% overlapped)',
              m.rank, m.exposed_pct, fmt_ns(m.exposed_ns), fmt_ns(m.comm_ns), m.overlap_pct) AS message,
       CASE
           WHEN t.main_coll IN ('sendrecv', 'send', 'recv') THEN
               'most exposed time is point-to-point NCCL send/receive, which is pipeline-parallel stage traffic or an all-to-all the trace does not name (no record_param_comms or c10d operator over the kernels): for a pipeline, shrink the bubble with more micro-batches per step or an interleaved (virtual pipeline) schedule and check that sends do not wait on a slower stage; for an all-to-all, balance what each rank sends and overlap it with compute'
           WHEN t.main_coll = 'alltoall' THEN
               'most exposed time is all-to-all (MoE token dispatch, or sharded embedding lookups in a recommendation model): overlap it with compute, balance what each rank sends (capacity factor or load-balancing loss for experts, table placement for embeddings), or keep the exchange inside a node'
           WHEN t.main_coll IN ('allgather', 'reducescatter') THEN
               'most exposed time is all-gather / reduce-scatter (sharded data parallel): prefetch the next layer''s parameters (FSDP forward_prefetch / backward_prefetch, ZeRO overlap_comm), use larger shard groups per all-gather, or shard within a node (hybrid sharding)'
           WHEN t.main_coll IN ('allreduce', 'reduce', 'broadcast') THEN
               'most exposed time is all-reduce (data-parallel gradients or tensor-parallel activations): start gradient all-reduce during backward (DDP bucket_cap_mb, gradient_as_bucket_view), reduce in bf16, and keep tensor parallelism inside a node'
       END AS fix,
       printf('up to %s of the %s GPU span (%.1f%%), if all of this communication ran under compute', fmt_ns(m.exposed_ns), fmt_ns(m.exposed_ns / (m.exposed_pct / 100)), m.exposed_pct) AS impact,
       json_object('exposed_comm_ns', m.exposed_ns, 'comm_ns', m.comm_ns, 'overlap_pct', round(m.overlap_pct, 2),
                   'top_collectives', t.colls)::VARCHAR AS evidence
FROM m LEFT JOIN top t ON t.run_id = m.run_id AND t.rank = m.rank
WHERE m.exposed_pct / 100 >= $min_ratio
ORDER BY m.run_id, m.rank
